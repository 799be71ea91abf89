package verify

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/verify/dcgm"
)

// checkDCGM turns a dcgmi diag run into one check per DCGM test, id
// "dcgm.<test>" (see dcgmTestID). DCGM's Warn passes with its warning as
// the message: DCGM itself does not fail the run on it. A test DCGM
// skipped (or did not run) is a skip with DCGM's reason, never a pass: the
// gate decides what a skip costs.
//
// A node without dcgmi fails: the tier asked for diagnostics that could
// not run, and a gate that skips them passes a node nobody checked. The
// spec may mark dcgm optional (verify { optional }); then the missing tool
// is a skip, unless the spec also pins DCGM (pinned), which apply
// installs, so its absence is drift.
func checkDCGM(k *kb.KB, res *dcgm.Result, pinned, optional bool) []CheckResult {
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
		out = append(out, checkDCGMTest(k, t))
	}
	return out
}

// dcgmTestID names a DCGM test's check: "dcgm." and the test name in
// lower case with every run of other characters than letters and digits
// as one underscore ("Page Retirement/Row Remap" ->
// dcgm.page_retirement_row_remap, DCGM 4's "pcie" -> dcgm.pcie).
func dcgmTestID(name string) string {
	var b strings.Builder
	gap := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if gap && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			gap = false
			continue
		}
		gap = true
	}
	return CheckDCGMTest.Named(b.String())
}

// checkDCGMTest is one DCGM test's check.
func checkDCGMTest(k *kb.KB, t dcgm.Test) CheckResult {
	r := CheckResult{ID: dcgmTestID(t.Name), Observed: t.Status, Expected: "Pass"}
	test := strings.TrimSpace(t.Category + " test " + t.Name)
	switch t.Status {
	case "Pass", "Warn":
		r.Status = StatusPass
		r.Message = strings.Join(t.Warnings, "; ")
	case "Skip", "Not run", "":
		r.Status = StatusSkip
		r.Message = "DCGM skipped the " + test
		if t.Status == "Not run" {
			r.Message = "DCGM did not run the " + test
		}
		// DCGM's reason, where it gave one.
		if reason := append(append([]string{}, t.Warnings...), t.Info...); len(reason) > 0 {
			r.Message += ": " + strings.Join(reason, "; ")
		}
	case "Fail":
		r.Status = StatusFail
		r.Message = "DCGM " + test + " failed"
		var gpus []string
		for _, id := range t.FailedGPUs() {
			gpus = append(gpus, fmt.Sprintf("gpu%d", id))
		}
		switch {
		case len(gpus) > 0:
			r.Message += " on " + strings.Join(gpus, ", ")
		case t.All == "Fail":
			r.Message += " on every GPU"
		}
		if len(t.Warnings) > 0 {
			r.Message += ": " + strings.Join(t.Warnings, "; ")
		}
		codes := make([]uint64, 0, len(t.ErrorIDs))
		for _, id := range t.ErrorIDs {
			if id >= 0 {
				codes = append(codes, uint64(id))
			}
		}
		if w := worstRemedy(k, "dcgm", codes); w != nil {
			r.Remedy = remedyOf(*w)
		}
	default:
		r.Status = StatusError
		r.Message = fmt.Sprintf("DCGM %s: DCGM reported the status %q, which gpuform does not know; read dcgmi diag's output on the node", test, t.Status)
	}
	return r
}
