package verify

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

func checkNUMA(exp Expectation, rep *nvmlfacts.Report, id gpuIdentity) []CheckResult {
	var out []CheckResult
	for _, idx := range slices.Sorted(maps.Keys(exp.NUMANode)) {
		want := exp.NUMANode[idx]
		r := CheckResult{ID: CheckNUMANode.GPU(idx), Expected: strconv.Itoa(want)}
		g := rep.GPUByIndex(idx)
		switch {
		case g == nil:
			r.Status, r.Message = StatusSkip, id.absent(idx)
		case g.NUMANode == nil:
			r.Status, r.Message = StatusSkip, "NUMA node not reported"
		default:
			r.Observed = strconv.Itoa(*g.NUMANode)
			if g.CPUAffinity != "" {
				r.Observed += " (CPUs " + g.CPUAffinity + ")"
			}
			r.Status = StatusPass
			if *g.NUMANode != want {
				r.Status = StatusFail
				r.Message = fmt.Sprintf("gpu%d (%s) is on NUMA node %d, the spec binds it to node %d", idx, g.BusID, *g.NUMANode, want)
			}
		}
		out = append(out, r)
	}
	return out
}
