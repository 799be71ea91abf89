package verify

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/provision/verify/dcgm"
)

// checkDCGM turns a dcgmi diag run into one check per DCGM test, id
// "dcgm.<test>" (lower case, spaces as underscores). DCGM's Warn passes
// with its warning as the message: DCGM itself does not fail the run on it.
//
// A node without dcgmi is skipped, unless the spec pins DCGM (required):
// then the missing tool is itself the failure.
func checkDCGM(res *dcgm.Result, required bool) []CheckResult {
	if res == nil {
		return nil
	}
	level := fmt.Sprintf("dcgmi diag -r %d", res.Level)
	switch {
	case res.NotInstalled && required:
		return []CheckResult{{ID: string(CheckDCGMDiag), Status: StatusFail, Observed: "dcgmi not installed", Expected: level + " passes", Message: "the spec pins DCGM, but dcgmi is not installed on the node"}}
	case res.NotInstalled:
		return []CheckResult{{ID: string(CheckDCGMDiag), Status: StatusSkip, Expected: level + " passes", Message: "dcgmi is not installed on the node"}}
	case res.Diag == nil || (res.Failure != "" && len(res.Diag.Tests) == 0):
		return []CheckResult{{ID: string(CheckDCGMDiag), Status: StatusError, Expected: level + " passes", Message: res.Failure}}
	}
	var out []CheckResult
	if res.Failure != "" {
		out = append(out, CheckResult{ID: string(CheckDCGMDiag), Status: StatusError, Expected: level + " passes", Message: res.Failure})
	}
	for _, t := range res.Diag.Tests {
		r := CheckResult{ID: CheckDCGMTest.Named(strings.ReplaceAll(strings.ToLower(t.Name), " ", "_")), Observed: t.Status, Expected: "Pass"}
		switch t.Status {
		case "Pass", "Warn":
			r.Status = StatusPass
		case "Skip", "":
			r.Status, r.Message = StatusSkip, "DCGM skipped this test"
		default:
			r.Status = StatusFail
			var gpus []string
			for _, id := range t.FailedGPUs() {
				gpus = append(gpus, fmt.Sprintf("gpu%d", id))
			}
			r.Message = "DCGM " + t.Category + " test " + t.Name + " failed"
			if len(gpus) > 0 {
				r.Message += " on " + strings.Join(gpus, ", ")
			}
		}
		if len(t.Warnings) > 0 && r.Status != StatusSkip {
			if r.Message != "" {
				r.Message += ": "
			}
			r.Message += strings.Join(t.Warnings, "; ")
		}
		out = append(out, r)
	}
	return out
}
