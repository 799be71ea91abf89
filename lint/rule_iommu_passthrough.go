package lint

import (
	"fmt"
	"strings"
)

// iommuPassthroughRule declares iommu_passthrough.
func iommuPassthroughRule() Rule {
	return Rule{
		Name:     "iommu_passthrough",
		Severity: Warning,
		Summary:  "GPUDirect RDMA is set up but the kernel command line lacks iommu=pt.",
		Check:    checkIOMMU,
	}
}

// iommuPassthroughArgs are kernel arguments that keep the IOMMU out of the
// peer-to-peer path: passthrough mode, or the IOMMU switched off.
var iommuPassthroughArgs = []string{"iommu=pt", "iommu.passthrough=1", "intel_iommu=off", "amd_iommu=off", "iommu=off"}

func checkIOMMU(ctx *Context) {
	hf, ok := ctx.hostFact("iommu-pt")
	if !ok {
		return
	}
	fact := hf.Fact
	for _, n := range ctx.Nodes() {
		if !gpuDirectIntended(n) {
			continue
		}
		found := false
		for _, a := range n.KernelArgs {
			// One element may carry several arguments ("intel_iommu=on iommu=pt").
			for _, arg := range strings.Fields(a.V) {
				for _, want := range iommuPassthroughArgs {
					if strings.EqualFold(arg, want) {
						found = true
					}
				}
			}
		}
		if found {
			continue
		}
		rng := n.KernelArgsRange
		if rng.Filename == "" {
			rng = n.DeclRange
			if n.Driver != nil && n.Driver.Peermem.Set {
				rng = n.Driver.Peermem.Range
			}
		}
		ctx.ReportAs(severityFor(fact, Warning), rng,
			fmt.Sprintf("%s: GPUDirect RDMA is set up but kernel_args has no iommu=pt", nodeRef(n)),
			fmt.Sprintf("With the IOMMU translating DMA, peer-to-peer traffic between GPUs and NICs is redirected through the CPU root complex or fails; NVIDIA's documentation asks for passthrough on bare metal (%s). Add \"iommu=pt\" to kernel_args (it needs a reboot).", cite(fact)))
	}
}
