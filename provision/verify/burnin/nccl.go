package burnin

import (
	"fmt"

	"github.com/gpuform/gpuform/provision/verify/nccltest"
)

// NCCLIterations is how many times the burn-in repeats each single-node
// nccl-tests run: enough iterations for their busbw's variance to mean
// something, each as long as the spec's run.
const NCCLIterations = 5

// NCCLFrom turns the iterations of one nccl-tests command into an
// NCCLRun: each iteration's largest size's busbw (the lower of
// out-of-place and in-place, as verify's floor judges it) and #wrong. An
// iteration that failed, printed no row, or ran without validation (-c 0,
// no #wrong to count) is a failure: it cannot show the run steady.
func NCCLFrom(name string, iterations []nccltest.Result) NCCLRun {
	out := NCCLRun{Name: name}
	for i, res := range iterations {
		if res.Failure != "" {
			out.Failures = append(out.Failures, fmt.Sprintf("iteration %d: %s", i+1, res.Failure))
			continue
		}
		if len(res.Runs) == 0 {
			out.Failures = append(out.Failures, fmt.Sprintf("iteration %d: no nccl-tests result", i+1))
			continue
		}
		r := res.Runs[len(res.Runs)-1]
		row, ok := r.Largest()
		switch {
		case !ok:
			out.Failures = append(out.Failures, fmt.Sprintf("iteration %d: no result row", i+1))
			continue
		case !r.Validation:
			out.Failures = append(out.Failures, fmt.Sprintf("iteration %d: ran with -c 0, no #wrong counted", i+1))
			continue
		}
		var wrong int64
		for _, w := range []*int64{row.OutOfPlace.Wrong, row.InPlace.Wrong} {
			if w != nil {
				wrong += *w
			}
		}
		out.BusBWGBs = append(out.BusBWGBs, min(row.OutOfPlace.BusBW, row.InPlace.BusBW))
		out.Wrong = append(out.Wrong, wrong)
	}
	return out
}
