package verify

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

func checkPCIe(exp Expectation, g *nvmlfacts.GPU) *CheckResult {
	r := &CheckResult{ID: CheckPCIeLink.GPU(g.Index)}
	p := g.PCIe
	if p == nil {
		r.Status, r.Message = StatusSkip, "PCIe link not reported"
		return r
	}
	wantGen := exp.MinPCIeGen
	if wantGen == 0 {
		wantGen = p.GPUMaxGen
		if wantGen == 0 {
			wantGen = p.MaxGen
		}
	}
	wantWidth := exp.MinPCIeWidth
	if wantWidth == 0 {
		wantWidth = p.MaxWidth
	}
	// An idle GPU drops its link to Gen1 to save power (the lspci fixture
	// shows "2.5GT/s (downgraded)"); what a slot or riser fault caps is the
	// negotiated maximum, so an idle GPU is judged on MaxGen.
	gen, genNote := p.CurrentGen, ""
	if g.Throttle != nil && g.Throttle.Mask&nvmlfacts.ThrottleMask([]string{nvmlfacts.ThrottleGPUIdle}) != 0 && p.MaxGen > gen {
		// Say so: the idle link's trained speed is not measured, and a
		// riser that trains low under load shows only in the NCCL checks.
		gen, genNote = p.MaxGen, fmt.Sprintf(" (idle at Gen%d: the link's maximum is shown; its speed under load is not measured)", p.CurrentGen)
	}
	r.Observed = fmt.Sprintf("Gen%d x%d%s", gen, p.CurrentWidth, genNote)
	r.Expected = fmt.Sprintf("Gen%d x%d", wantGen, wantWidth)
	var bad []string
	if gen < wantGen {
		bad = append(bad, fmt.Sprintf("generation %d below %d", gen, wantGen))
	}
	if p.CurrentWidth < wantWidth {
		bad = append(bad, fmt.Sprintf("width x%d below x%d", p.CurrentWidth, wantWidth))
	}
	r.Status = StatusPass
	if len(bad) > 0 {
		r.Status = StatusFail
		r.Message = "downgraded PCIe link on " + g.BusID + ": " + strings.Join(bad, ", ") + " (reseat the GPU or check the riser/slot)"
		if g.InVM() {
			// Inside a VM the link is what the hypervisor presents: cloud
			// instance types wire GPUs at x8 (an A10G or T4 on AWS reports
			// x8 of x16), and there is no GPU to reseat.
			r.Message = fmt.Sprintf("PCIe link on %s: %s; the GPU is passed through to this virtual machine (%s), "+
				"so the link is the one the hypervisor presents: if the instance type is built this way, set min_pcie_gen / min_pcie_width "+
				"for this node to what it provides; otherwise report it to the cloud provider or hypervisor admin", g.BusID, strings.Join(bad, ", "), g.Virtualization)
		} else if gen >= p.MaxGen && p.CurrentWidth >= wantWidth && exp.MinPCIeGen == 0 {
			// The link runs at its maximum and that maximum, the lower of
			// GPU and host, is below the GPU's own: a Gen5 GPU in a Gen4
			// server, or a slot capped in the BIOS. Reseating fixes neither.
			r.Message = fmt.Sprintf("PCIe link on %s: the slot or host supports Gen%d, the GPU Gen%d "+
				"(check the BIOS slot setting and the riser; if the platform itself is Gen%d, set min_pcie_gen = %d)",
				g.BusID, p.MaxGen, wantGen, p.MaxGen, p.MaxGen)
		}
	}
	return r
}
