package lint

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
)

// ncclFloorPhysicalRule declares nccl_floor_physical.
func ncclFloorPhysicalRule() Rule {
	return Rule{
		Name:     "nccl_floor_physical",
		Severity: Error,
		Summary:  "An nccl_test bandwidth floor is above what the collective can reach over the GPU's NVLink, or above every published result.",
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
		gpus := gpuCount(n.Hardware)
		for _, t := range ncclTests(n) {
			coll := ncclCollective(t.Command.V)
			floor := t.MinBusBWGbps.V
			c, ok := ctx.kb().NVLinkBusBWCeiling(m, coll, gpus)
			if !ok {
				continue
			}
			if floor > c.GBps {
				ctx.ReportAs(severityFor(c.Fact, Error), t.MinBusBWGbps.Range,
					fmt.Sprintf("%s: nccl_test %q floor %g GB/s is above the %.0f GB/s %s can physically reach on %d x %s", nodeRef(n), t.Name, floor, c.GBps, collectiveName(coll), gpus, m.Name),
					fmt.Sprintf("The ceiling is the %s (%s; busbw definitions: https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md). This check fails on every healthy node and verify would drain the fleet. Set the floor about 10%% below a measured healthy node. %s", c.Why, cite(c.Fact), caveat(c.Fact)))
				continue
			}
			best, ok := ctx.kb().BestPublishedBusBW(m.Name, coll, gpus)
			if ok && floor > best.BusBWGBps {
				ctx.ReportAs(Warning, t.MinBusBWGbps.Range,
					fmt.Sprintf("%s: nccl_test %q floor %g GB/s is above the best published %s result for %d x %s (%g GB/s)", nodeRef(n), t.Name, floor, collectiveName(coll), gpus, kb.ModelKey(m.Name), best.BusBWGBps),
					fmt.Sprintf("%s reports %g GB/s (%s, %s). The physical ceiling is %.0f GB/s, but no published run reaches this floor, so a healthy node may fail it. Set the floor from a measured healthy node.", best.Platform, best.BusBWGBps, best.Kind, cite(best.Fact), c.GBps))
			}
		}
	}
}

// ncclCollective reads the collective from an nccl-tests command:
// "all_reduce_perf -b 8" → "all_reduce"; "" when the binary is not one.
func ncclCollective(command string) string {
	f := strings.Fields(command)
	for _, w := range f {
		base := w[strings.LastIndex(w, "/")+1:]
		if c, ok := strings.CutSuffix(base, "_perf"); ok {
			return c
		}
	}
	return ""
}

func collectiveName(c string) string {
	if c == "" {
		return "a collective"
	}
	return c
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
		typ, ok := ctx.kb().BestPublishedBusBW(n.Hardware.GPUModel, "all_reduce", gpuCount(n.Hardware))
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
