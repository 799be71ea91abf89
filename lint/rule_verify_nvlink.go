package lint

import (
	"fmt"

	"github.com/gpuform/gpuform/kb"
)

// verifyNVLinkRule declares verify_nvlink.
func verifyNVLinkRule() Rule {
	return Rule{
		Name:     "verify_nvlink",
		Severity: Error,
		Summary:  "verify.nvml.nvlink = \"all_active\" on GPUs that have no NVLink.",
		Check:    checkVerifyNVLink,
	}
}

// checkVerifyNVLink: a spec that expects every NVLink up on a board whose
// GPUs talk over PCIe (hardware { interconnect = "pcie" }) or on a model
// without NVLink (an L40S, an L4) fails every healthy node: NVML reports no
// active link on them.
func checkVerifyNVLink(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.Verify == nil || n.Verify.NVML == nil || !n.Verify.NVML.NVLink.Set || n.Verify.NVML.NVLink.V != "all_active" {
			continue
		}
		a := n.Verify.NVML.NVLink
		h := n.Hardware
		if h == nil {
			continue
		}
		if h.Interconnect == "pcie" {
			ctx.Report(a.Range,
				fmt.Sprintf("%s: verify expects every NVLink active but %s connects its GPUs over PCIe", nodeRef(n), hwName(h)),
				"NVML reports no active NVLink on a PCIe board, so nvml.nvlink would fail every healthy node. Set nvml { nvlink = \"none\" }, or fix the hardware's interconnect.")
			continue
		}
		if h.GPUModel == "" {
			continue
		}
		m, ok := ctx.kb().GPU(h.GPUModel)
		if !ok || m.NVLinkGBps > 0 || m.NVLinkFact.Status == kb.StatusUnknown {
			continue
		}
		ctx.ReportAs(severityFor(m.NVLinkFact, Error), a.Range,
			fmt.Sprintf("%s: verify expects every NVLink active but the %s has no NVLink", nodeRef(n), m.Name),
			fmt.Sprintf("The knowledge base lists no NVLink for the %s (%s: %q), so nvml.nvlink would fail every healthy node. Set nvml { nvlink = \"none\" }. %s", m.Name, cite(m.NVLinkFact), m.NVLinkGeneration, caveat(m.NVLinkFact)))
	}
}
