//go:build cgo

package verify

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/verify/dcgm"
)

// emittedIDs runs every check kind on every simulated system, with a DCGM
// run and an nccl-tests run, and returns the check ids as CHECKS.md writes
// them: "[gpuN]" dropped, one row for all DCGM tests and one for all
// nccl-tests runs.
func emittedIDs(t *testing.T) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	add := func(results []CheckResult) {
		for _, r := range results {
			id, _, _ := strings.Cut(r.ID, "[")
			switch {
			case strings.HasPrefix(id, "dcgm.") && id != "dcgm.diag":
				id = "dcgm.<test>"
			case strings.HasPrefix(id, "nccl."):
				id = "nccl.<name>"
			}
			ids[id] = true
		}
	}
	for _, c := range mockCases() {
		exp := expectationFor(t, c)
		exp.NCCL = []NCCLExpectation{{Name: "allreduce", Command: "all_reduce_perf -g 8"}}
		extra := healthyHost(c)
		extra.DCGM = &dcgm.Result{Level: 1, Failure: "host engine restarted", Diag: &dcgm.Diag{Tests: []dcgm.Test{{Name: "software", Status: "Pass"}}}}
		add(Check(exp, collectMock(t, c.mock), extra))
		// Without NVML facts: the failed nvml.facts check.
		add(Check(exp, nil, extra))
	}
	return ids
}

// TestChecksDocumented keeps CHECKS.md and the checks in step, as
// TestRuleCatalogue does for lint's docs/rules.md: every id a check
// emits has a row, and every row is an id some check emits.
func TestChecksDocumented(t *testing.T) {
	b, err := os.ReadFile("CHECKS.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_.<>]+)(?:\\[gpuN\\])?` \\|")
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = true
	}
	emitted := emittedIDs(t)
	// The report itself adds the check for a host that was never reached.
	emitted["host.reachable"] = true
	var missing, stale []string
	for id := range emitted {
		if !documented[id] {
			missing = append(missing, id)
		}
	}
	for id := range documented {
		if !emitted[id] {
			stale = append(stale, id)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	if len(missing) > 0 {
		t.Errorf("checks without a row in CHECKS.md: %v", missing)
	}
	if len(stale) > 0 {
		t.Errorf("CHECKS.md rows no check emits: %v", stale)
	}
	if len(documented) < 20 {
		t.Errorf("read %d rows from CHECKS.md; the table format changed", len(documented))
	}
}
