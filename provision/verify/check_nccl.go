package verify

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

func checkNCCL(exp Expectation, rep *nvmlfacts.Report, extra HostFacts) []CheckResult {
	var out []CheckResult
	cat := extra.Catalogue
	for _, t := range exp.NCCL {
		r := CheckResult{ID: CheckNCCL.Named(t.Name)}
		res, ran := extra.NCCL[t.Name]
		floor, floorNote := t.MinBusBWGBps, "from spec"
		var th *Threshold
		if floor == 0 {
			if cat == nil {
				cat = DefaultCatalogue()
			}
			if found, ok := cat.Lookup(modelOf(exp, rep), exp.Interconnect, exp.GPUCount, collectiveOf(t.Command)); ok {
				th = &found
				floor, floorNote = found.MinBusBWGBps, "catalogue: "+found.Platform
			}
		}
		if floor > 0 {
			r.Expected = fmt.Sprintf("busbw >= %.2f GB/s (%s), #wrong 0", floor, floorNote)
		} else {
			r.Expected = "#wrong 0, out of bounds 0 (no busbw floor known; set min_busbw_gbps)"
		}
		if !ran {
			r.Status, r.Message = StatusSkip, "not run at this tier"
			out = append(out, r)
			continue
		}
		if res.NotInstalled && exp.NCCLOptional {
			r.Status, r.Observed = StatusSkip, "not installed"
			r.Message = res.Failure + "; the spec marks nccl_tests optional"
			out = append(out, r)
			continue
		}
		v := res.Judge(floor)
		// The catalogue floor was measured at a larger message size than
		// the run reached: busbw grows with size, so judging the smaller
		// size against it would fail a healthy node. The other rules
		// (#wrong, footer, failures) still apply.
		short := th != nil && th.MessageBytes > 0 && v.Size > 0 && v.Size < th.MessageBytes
		if short {
			v = res.Judge(0)
		}
		if v.Size > 0 {
			r.Observed = fmt.Sprintf("busbw %.2f GB/s at %s", v.BusBW, nccltest.FormatSize(v.Size))
			if last := res.Runs[len(res.Runs)-1]; last.NGPUs > 0 && !last.Validation {
				// -c 0: nccl-tests counted no #wrong, so a pass says
				// nothing about data corruption.
				r.Observed += " (not validated: -c 0, #wrong not counted)"
			}
		}
		switch {
		case !v.Pass:
			r.Status, r.Message = StatusFail, strings.Join(v.Reasons, "; ")
		case short:
			// The catalogue floor was measured at a larger message size;
			// a smaller sweep cannot reach it, so it cannot be judged.
			r.Status = StatusError
			r.Message = fmt.Sprintf("the run ends at %s but the catalogue floor is for %s; extend the sweep (-e %s) or set min_busbw_gbps",
				nccltest.FormatSize(v.Size), nccltest.FormatSize(th.MessageBytes), nccltest.FormatSize(th.MessageBytes))
		default:
			r.Status = StatusPass
		}
		out = append(out, r)
	}
	return out
}

// modelOf picks the GPU model for catalogue lookups: the spec's, else the
// first GPU's name.
func modelOf(exp Expectation, rep *nvmlfacts.Report) string {
	if exp.GPUModel != "" {
		return exp.GPUModel
	}
	if rep != nil && len(rep.GPUs) > 0 {
		return rep.GPUs[0].Name
	}
	return ""
}

// collectiveOf guesses the collective from the test binary name, e.g.
// "all_reduce_perf" → "all_reduce".
func collectiveOf(cmd string) string {
	words, err := nccltest.SplitCommand(cmd)
	if err != nil {
		return ""
	}
	for _, w := range words {
		base := w[strings.LastIndexByte(w, '/')+1:]
		if c, ok := strings.CutSuffix(base, "_perf"); ok {
			return c
		}
	}
	return ""
}
