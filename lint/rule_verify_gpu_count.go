package lint

import (
	"fmt"
)

// verifyGPUCountRule declares verify_gpu_count.
func verifyGPUCountRule() Rule {
	return Rule{
		Name:     "verify_gpu_count",
		Severity: Error,
		Summary:  "verify.nvml.gpus differs from the hardware's GPU count.",
		Check:    checkVerifyGPUCount,
	}
}

func checkVerifyGPUCount(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.Verify == nil || n.Verify.NVML == nil || !n.Verify.NVML.GPUs.Set {
			continue
		}
		want := gpuCount(n.Hardware)
		got := n.Verify.NVML.GPUs.V
		if want == 0 || got == want {
			continue
		}
		ctx.Report(n.Verify.NVML.GPUs.Range,
			fmt.Sprintf("%s: verify expects %d GPUs but %s has %d", nodeRef(n), got, hwName(n.Hardware), want),
			fmt.Sprintf("verify would fail every healthy node (or pass one that lost GPUs). Set nvml { gpus = %d }, or fix the hardware profile.", want))
	}
}
