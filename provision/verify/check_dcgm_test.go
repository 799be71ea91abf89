package verify

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpuform/gpuform/provision/verify/dcgm"
)

func TestDCGMChecks(t *testing.T) {
	data, err := os.ReadFile("dcgm/testdata/dcgmi-diag-deployment-only-dcgm4.1.1-8xV100.txt")
	if err != nil {
		t.Fatal(err)
	}
	real, err := dcgm.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	failing := &dcgm.Diag{Tests: []dcgm.Test{
		{Category: "Integration", Name: "PCIe", Status: "Fail", GPUs: map[int]string{0: "Pass", 3: "Fail"}, Warnings: []string{"bandwidth below threshold"}},
		{Category: "Hardware", Name: "memory", Status: "Warn", GPUs: map[int]string{0: "Warn"}, Warnings: []string{"retry"}},
		{Category: "Stress", Name: "targeted power", Status: "Skip"},
	}}
	tests := []struct {
		name     string
		res      *dcgm.Result
		pinned   bool
		optional bool
		want     []CheckResult
	}{
		{"not run", nil, false, false, nil},
		{"real pass", &dcgm.Result{Level: 1, Diag: real}, false, false, []CheckResult{{ID: "dcgm.software", Status: StatusPass, Observed: "Pass", Expected: "Pass"}}},
		// The tier asked for diagnostics that cannot run: a gate that
		// skipped them would pass a node nobody checked.
		{"not installed", &dcgm.Result{Level: 1, NotInstalled: true}, false, false, []CheckResult{{ID: "dcgm.diag", Status: StatusFail, Observed: "dcgmi not installed", Expected: "dcgmi diag -r 1 passes",
			Message: `this tier runs DCGM diagnostics, but dcgmi is not installed on the node: install DCGM, or add "dcgm" to verify { optional } where a node may lack it`}}},
		{"optional, not installed", &dcgm.Result{Level: 1, NotInstalled: true}, false, true, []CheckResult{{ID: "dcgm.diag", Status: StatusSkip, Observed: "dcgmi not installed", Expected: "dcgmi diag -r 1 passes", Message: "dcgmi is not installed on the node; the spec marks dcgm optional"}}},
		// The spec pins DCGM: its absence is the failure, optional or not.
		{"pinned but not installed", &dcgm.Result{Level: 1, NotInstalled: true}, true, true, []CheckResult{{ID: "dcgm.diag", Status: StatusFail, Observed: "dcgmi not installed", Expected: "dcgmi diag -r 1 passes", Message: "the spec pins DCGM, but dcgmi is not installed on the node"}}},
		{"hang", &dcgm.Result{Level: 1, Failure: "dcgmi diag -r 1 did not finish within 3m0s"}, false, false, []CheckResult{{ID: "dcgm.diag", Status: StatusError, Expected: "dcgmi diag -r 1 passes", Message: "dcgmi diag -r 1 did not finish within 3m0s"}}},
		{"failures", &dcgm.Result{Level: 1, Diag: failing}, false, false, []CheckResult{
			{ID: "dcgm.pcie", Status: StatusFail, Observed: "Fail", Expected: "Pass", Message: "DCGM Integration test PCIe failed on gpu3: bandwidth below threshold"},
			{ID: "dcgm.memory", Status: StatusPass, Observed: "Warn", Expected: "Pass", Message: "retry"},
			{ID: "dcgm.targeted_power", Status: StatusSkip, Observed: "Skip", Expected: "Pass", Message: "DCGM skipped this test"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, checkDCGM(tt.res, tt.pinned, tt.optional)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
