package verify

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

func checkNIC(exp Expectation, rep *nvmlfacts.Report, id gpuIdentity) []CheckResult {
	var out []CheckResult
	for _, idx := range slices.Sorted(maps.Keys(exp.NIC)) {
		want := exp.NIC[idx]
		allowed := want.Allowed
		if allowed == nil {
			allowed = []nvmlfacts.Level{nvmlfacts.LevelPIX, nvmlfacts.LevelPXB}
		}
		names := make([]string, len(allowed))
		for i, l := range allowed {
			names[i] = string(l)
		}
		r := CheckResult{ID: CheckGPUNIC.GPU(idx), Expected: want.NIC + " at " + strings.Join(names, "|")}
		var pair *nvmlfacts.NICPair
		for i := range rep.NICTopology {
			if p := &rep.NICTopology[i]; p.GPU == idx && p.NIC == want.NIC {
				pair = p
			}
		}
		switch {
		case rep.GPUByIndex(idx) == nil:
			r.Status, r.Message = StatusSkip, id.absent(idx)
		case pair == nil:
			r.Status, r.Message = StatusFail, fmt.Sprintf("no topology for gpu%d and %s (NIC missing or not passed to the agent)", idx, want.NIC)
		default:
			r.Observed = want.NIC + " at " + string(pair.Level)
			r.Status = StatusPass
			if !slices.Contains(allowed, pair.Level) {
				r.Status = StatusFail
				r.Message = fmt.Sprintf("gpu%d reaches %s through %s: GPUDirect RDMA traffic crosses the CPU", idx, want.NIC, pair.Level)
			}
		}
		out = append(out, r)
	}
	return out
}
