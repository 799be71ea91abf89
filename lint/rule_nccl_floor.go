package lint

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/lint/compat"
	"github.com/gpuform/gpuform/spec"
)

// ncclFloorPhysicalRule declares nccl_floor_physical.
func ncclFloorPhysicalRule() Rule {
	return Rule{
		Name:     "nccl_floor_physical",
		Severity: Error,
		Summary:  "An nccl_test bandwidth floor is above what the GPU's NVLink can carry.",
		Check:    checkNCCLFloorPhysical,
	}
}

// ncclFloorLowRule declares nccl_floor_low.
func ncclFloorLowRule() Rule {
	return Rule{
		Name:     "nccl_floor_low",
		Severity: Warning,
		Summary:  "An nccl_test bandwidth floor is below 10% of the published figure for this platform.",
		Check:    checkNCCLFloorLow,
	}
}

// nvlinkInterconnect reports whether GPUs talk over NVLink (so NVLink
// bandwidth bounds single-node collectives).
func nvlinkInterconnect(h *spec.Hardware) bool {
	return h != nil && (h.Interconnect == "nvswitch" || h.Interconnect == "nvlink_bridge")
}

func ncclTests(n *spec.Node) []*spec.NCCLTest {
	if n.Verify == nil {
		return nil
	}
	var out []*spec.NCCLTest
	for _, t := range n.Verify.NCCLTests {
		if t != nil && t.MinBusBWGbps.Set {
			out = append(out, t)
		}
	}
	return out
}

func checkNCCLFloorPhysical(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if !nvlinkInterconnect(n.Hardware) {
			continue
		}
		m, ok := gpuModel(ctx, n)
		if !ok || m.NVLinkGBps <= 0 {
			continue
		}
		for _, t := range ncclTests(n) {
			if t.MinBusBWGbps.V <= m.NVLinkGBps {
				continue
			}
			f := m.NVLinkFact
			ctx.ReportAs(severityFor(f, Error), t.MinBusBWGbps.Range,
				fmt.Sprintf("%s: nccl_test %q floor %g GB/s is above the %g GB/s NVLink bandwidth of %s", nodeRef(n), t.Name, t.MinBusBWGbps.V, m.NVLinkGBps, m.Name),
				fmt.Sprintf("Bus bandwidth cannot exceed the GPU's NVLink bandwidth (%s), so this check fails on every healthy node and verify would drain the fleet. Published single-node all_reduce results for 8x H100 are around 480 GB/s; set the floor about 10%% below a measured healthy node. %s", cite(f), caveat(f)))
		}
	}
}

// typicalBusBW finds the largest published single-node figure for a GPU
// family and GPU count in nccl-thresholds.tsv.
func typicalBusBW(kb *compat.KB, model string, gpus int) (compat.NCCLThreshold, bool) {
	fam := compat.ModelKey(model)
	if fam == "" || gpus == 0 {
		return compat.NCCLThreshold{}, false
	}
	var best compat.NCCLThreshold
	found := false
	for _, t := range kb.NCCLThresholds() {
		if t.GPUs != gpus || !strings.Contains(strings.ToLower(t.Interconnect), "intra-node") || t.Collective != "all_reduce" {
			continue
		}
		if !strings.Contains(strings.ToUpper(t.Platform), fmt.Sprintf("%dX %s", gpus, fam)) {
			continue
		}
		if !found || t.BusBWGBps > best.BusBWGBps {
			best, found = t, true
		}
	}
	return best, found
}

// lowFloorShare is the share of the published figure below which a floor
// no longer catches a broken node (a GPU that fell back to PCIe still
// reaches a few percent of NVLink bandwidth).
const lowFloorShare = 0.10

func checkNCCLFloorLow(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.Hardware == nil || n.Hardware.GPUModel == "" {
			continue
		}
		typ, ok := typicalBusBW(ctx.kb(), n.Hardware.GPUModel, gpuCount(n.Hardware))
		if !ok {
			continue
		}
		for _, t := range ncclTests(n) {
			if !strings.Contains(t.Command.V, "all_reduce") || t.MinBusBWGbps.V >= typ.BusBWGBps*lowFloorShare {
				continue
			}
			ctx.ReportAs(severityFor(typ.Fact, Warning), t.MinBusBWGbps.Range,
				fmt.Sprintf("%s: nccl_test %q floor %g GB/s is below 10%% of the %g GB/s published for %s", nodeRef(n), t.Name, t.MinBusBWGbps.V, typ.BusBWGBps, typ.Platform),
				fmt.Sprintf("A floor this low passes nodes whose NVLink is down and traffic runs over PCIe or the network, which is what the test is there to catch (%s). Set the floor near 90%% of a healthy node's largest-message busbw.", cite(typ.Fact)))
		}
	}
}
