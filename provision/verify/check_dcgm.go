package verify

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/lint/compat"
	"github.com/gpuform/gpuform/provision/verify/dcgm"
)

// checkDCGM turns a dcgmi diag run into one check per DCGM test, id
// "dcgm.<test>" (lower case, spaces as underscores). DCGM's Warn passes
// with its warning as the message: DCGM itself does not fail the run on it.
//
// A node without dcgmi fails: the tier asked for diagnostics that could
// not run, and a gate that skips them passes a node nobody checked. The
// spec may mark dcgm optional (verify { optional }); then the missing tool
// is a skip, unless the spec also pins DCGM (pinned), which apply
// installs, so its absence is drift.
func checkDCGM(res *dcgm.Result, pinned, optional bool) []CheckResult {
	if res == nil {
		return nil
	}
	level := fmt.Sprintf("dcgmi diag -r %d", res.Level)
	switch {
	case res.NotInstalled && pinned:
		return []CheckResult{{ID: string(CheckDCGMDiag), Status: StatusFail, Observed: "dcgmi not installed", Expected: level + " passes", Message: "the spec pins DCGM, but dcgmi is not installed on the node"}}
	case res.NotInstalled && optional:
		return []CheckResult{{ID: string(CheckDCGMDiag), Status: StatusSkip, Observed: "dcgmi not installed", Expected: level + " passes", Message: "dcgmi is not installed on the node; the spec marks dcgm optional"}}
	case res.NotInstalled:
		return []CheckResult{{ID: string(CheckDCGMDiag), Status: StatusFail, Observed: "dcgmi not installed", Expected: level + " passes",
			Message: "this tier runs DCGM diagnostics, but dcgmi is not installed on the node: install DCGM, or add \"dcgm\" to verify { optional } where a node may lack it"}}
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
			codes := make([]uint64, 0, len(t.ErrorIDs))
			for _, id := range t.ErrorIDs {
				if id >= 0 {
					codes = append(codes, uint64(id))
				}
			}
			if w := worstRemedy(compat.Default(), "dcgm", codes); w != nil {
				r.Remedy = remedyOf(*w)
			}
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
