package verify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/outlier"
	"github.com/gpuform/gpuform/provision/verify/isolate"
)

// IsolationCheck is the nccl_isolation.<test> check of one host of a node
// group whose multi-node test was isolated pairwise: whether the pairs
// named it (fail), cleared it (pass), found it a straggler (pass, or fail
// when stragglersFail), or could not decide it (error when the group's run
// failed, skip when it passed). Messages name hosts as the result does.
func IsolationCheck(test, host string, res isolate.Result, groupFailed, stragglersFail bool) CheckResult {
	r := CheckResult{ID: CheckIsolation.Named(test), Expected: "passes with a partner that passes with other nodes"}
	var passedWith, failedWith []string
	for _, p := range res.Pairs {
		if !slices.Contains(p.Hosts[:], host) || !p.Ran {
			continue
		}
		other := p.Hosts[0]
		if other == host {
			other = p.Hosts[1]
		}
		entry := other
		if p.BusBW > 0 {
			entry = fmt.Sprintf("%s (%.2f GB/s)", other, p.BusBW)
		}
		if p.Pass {
			passedWith = append(passedWith, entry)
		} else {
			failedWith = append(failedWith, entry)
		}
	}
	if i := slices.IndexFunc(res.Culprits, func(n isolate.Named) bool { return n.Host == host }); i >= 0 {
		r.Status = StatusFail
		r.Observed = "failed with " + strings.Join(failedWith, ", ")
		r.Message = "pairwise isolation names this node: it " + res.Culprits[i].Reason + "; drain it and check its fabric links (ibstat: a port below its rate, cables, transceivers)"
		return r
	}
	if i := slices.IndexFunc(res.Stragglers, func(s outlier.Straggler) bool { return s.Host == host }); i >= 0 {
		s := res.Stragglers[i]
		r.Status = StatusPass
		r.Observed = fmt.Sprintf("straggler: slow with every partner (%s); its best pair %.2f GB/s against a median of %.2f GB/s", strings.Join(passedWith, ", "), s.BestPair, s.Median)
		if stragglersFail {
			r.Status = StatusFail
			r.Message = "every pair with this node is more than the outlier margin below the median of the pairs, though above the floor (verify { outliers = \"fail\" })"
		}
		return r
	}
	if len(passedWith) > 0 {
		r.Status, r.Observed = StatusPass, "passed with "+strings.Join(passedWith, ", ")
		return r
	}
	why := res.Incomplete
	if why == "" {
		why = "no pair with this node ran"
	}
	r.Status, r.Message = StatusSkip, "isolation incomplete: "+why
	if groupFailed {
		r.Status = StatusError
	}
	if len(failedWith) > 0 {
		r.Observed = "failed with " + strings.Join(failedWith, ", ")
	}
	return r
}
