package lint

import (
	"fmt"

	"github.com/gpuform/gpuform/spec"
)

// gpuDirectWithoutPeermemRule declares gpudirect_without_peermem.
func gpuDirectWithoutPeermemRule() Rule {
	return Rule{
		Name:     "gpudirect_without_peermem",
		Severity: Warning,
		Summary:  "GPUs are paired with RDMA NICs but neither nvidia-peermem nor the open modules' DMA-BUF path is enabled.",
		Check:    checkGPUDirectWithoutPeermem,
	}
}

func checkGPUDirectWithoutPeermem(ctx *Context) {
	needed, ok := ctx.hostFact("peermem-needed")
	if !ok {
		return
	}
	dmabuf, _ := ctx.hostFact("dmabuf-alternative")
	for _, n := range ctx.Nodes() {
		d := n.Driver
		if d == nil || n.Affinity == nil || n.Hardware == nil || (d.Peermem.Set && d.Peermem.V) {
			continue
		}
		paired := false
		for _, nic := range n.Affinity.GPUNIC {
			if hw, ok := n.Hardware.NIC(nic.V); ok && hw.RDMA {
				paired = true
			}
		}
		if !paired {
			continue
		}
		drv, _ := nodeDriver(n)
		if flavour, ok := effectiveFlavour(ctx, d, drv); ok && flavour == spec.KernelOpen {
			// NCCL uses DMA-BUF on its own with the open modules
			// (facts.tsv dmabuf-alternative), so peermem is optional.
			continue
		}
		ctx.Report(at(d.Peermem, d.DeclRange),
			fmt.Sprintf("%s: GPUs are paired with RDMA NICs but GPUDirect RDMA is not enabled", nodeRef(n)),
			fmt.Sprintf("With the proprietary kernel modules GPUDirect RDMA needs nvidia-peermem loaded (%s); without it NCCL logs \"GPU Direct RDMA Disabled\" and stages every network transfer through host memory, costing inter-node bandwidth. Set peermem = true, or use kernel_module = \"open\" so NCCL can use DMA-BUF (%s).", cite(needed.Fact), orNone(dmabuf.Source())))
	}
}
