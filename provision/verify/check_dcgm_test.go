package verify

import (
	"os"
	"strings"
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
			{ID: "dcgm.targeted_power", Status: StatusSkip, Observed: "Skip", Expected: "Pass", Message: "DCGM skipped the Stress test targeted power"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, checkDCGM(testKB, tt.res, tt.pinned, tt.optional)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDCGMPublishedVerdicts: the checks gpuform makes of each published
// dcgmi diag output (dcgm/testdata/README.md) agree with the author's
// verdict: one check per test, the healthy runs pass, the failing ones
// fail on the test the author names, and a test DCGM skipped is a skip.
func TestDCGMPublishedVerdicts(t *testing.T) {
	tests := []struct {
		file           string
		passed         int
		failed, skip   []string
		messageHas     string // in the first failed check's message
		noCheckContain string // no check id contains this
	}{
		{file: "dcgmi-diag-r2-dcgm3.3.3-8xA100-p4de-healthy.txt", passed: 11},
		{file: "dcgmi-diag-r3-dcgm3.3.9-8xH200-healthy-eud-skip.txt", passed: 15, skip: []string{"dcgm.eud_test"}},
		{file: "dcgmi-diag-r3-dcgm3.3.9-2xRTXPRO6000-all-skip-printed-twice.txt", passed: 9,
			skip: []string{"dcgm.pcie", "dcgm.gpu_memory", "dcgm.targeted_stress", "dcgm.targeted_power", "dcgm.memory_bandwidth", "dcgm.eud_test"}},
		{file: "dcgmi-diag-r1-dcgm3.1.8-8xH200-persistence-mode-fail.txt", passed: 8, failed: []string{"dcgm.persistence_mode"},
			messageHas: "DCGM Deployment test Persistence Mode failed: Persistence mode for GPU 0 is currently disabled."},
		{file: "dcgmi-diag-r2-dcgm3.3.0-8xGA102-pcie-fail-all.txt", passed: 9, failed: []string{"dcgm.pcie"}, skip: []string{"dcgm.gpu_memory"},
			messageHas: "DCGM Integration test PCIe failed on every GPU: GPU 0 Error using CUDA API cudaDeviceGetByPCIBusId"},
		{file: "dcgmi-diag-r1-dcgm-blacklist-era-4xP100.txt", passed: 8, skip: []string{"dcgm.cuda_toolkit_libraries"}},
		{file: "dcgmi-diag-r2-dcgm-blacklist-era-4xP100-performance-section.txt", passed: 10,
			skip: []string{"dcgm.cuda_toolkit_libraries", "dcgm.diagnostic", "dcgm.sm_performance", "dcgm.targeted_performance", "dcgm.targeted_power"}},
		{file: "dcgmi-diag-deployment-only-dcgm4.1.1-8xV100.txt", passed: 1},
		{file: "dcgmi-diag-r2-dcgm4.4.2-1gpu-healthy.txt", passed: 3},
		{file: "dcgmi-diag-r2-dcgm4.2.3-4xL40S-pcie-fail-four-warnings.txt", passed: 2, failed: []string{"dcgm.pcie"},
			messageHas: "DCGM Integration test pcie failed: There was an internal error during the test: 'A child process (152) exited", noCheckContain: "warning"},
		{file: "dcgmi-diag-r2-dcgm4.4.1-8xB200-pcie-fail-warning.txt", passed: 2, failed: []string{"dcgm.pcie"},
			messageHas: "couldn't be parsed", noCheckContain: "warning"},
		{file: "dcgmi-diag-r4-dcgm2x-blacklist-era-healthy-gcm.txt", passed: 18},
		// Complete dcgmi diag -j documents (DCGM 3 shape, one GPU).
		{file: "dcgmi-diag-r2-json-dcgm3-1gpu-healthy-virtualclient.json", passed: 11},
		{file: "dcgmi-diag-r3-json-dcgm3-1gpu-healthy-virtualclient.json", passed: 15, skip: []string{"dcgm.eud_test"}},
		{file: "dcgmi-diag-fragment-deployment-error-row-remap-pending.txt", failed: []string{"dcgm.error"},
			messageHas: "GPU 3 has uncorrectable memory errors and row remappings are pending"},
		{file: "dcgmi-diag-r2-dcgm3.3.1-excerpt-gpu-memory-fail-gpu0-info-row.txt", failed: []string{"dcgm.gpu_memory", "dcgm.diagnostic", "dcgm.targeted_stress"},
			messageHas: "DCGM Hardware test GPU Memory failed on gpu0: GPU 0 Error using CUDA API cuCtxCreate", noCheckContain: "info"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile("dcgm/testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			d, err := dcgm.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			checks := checkDCGM(testKB, &dcgm.Result{Level: 2, Diag: d}, false, false)
			passed := 0
			var failed, skip []string
			seen := map[string]bool{}
			for _, c := range checks {
				if seen[c.ID] {
					t.Errorf("two checks share the id %s", c.ID)
				}
				seen[c.ID] = true
				if tt.noCheckContain != "" && strings.Contains(c.ID, tt.noCheckContain) {
					t.Errorf("check %s made from a message row", c.ID)
				}
				switch c.Status {
				case StatusPass:
					passed++
				case StatusFail:
					failed = append(failed, c.ID)
					if len(failed) == 1 && tt.messageHas != "" && !strings.Contains(c.Message, tt.messageHas) {
						t.Errorf("%s message %q, want it to contain %q", c.ID, c.Message, tt.messageHas)
					}
				case StatusSkip:
					skip = append(skip, c.ID)
					if !strings.HasPrefix(c.Message, "DCGM skipped the ") {
						t.Errorf("%s: skip without DCGM's reason: %q", c.ID, c.Message)
					}
				default:
					t.Errorf("%s: %s %q", c.ID, c.Status, c.Message)
				}
			}
			if passed != tt.passed || !cmp.Equal(failed, tt.failed) || !cmp.Equal(skip, tt.skip) {
				t.Errorf("passed %d failed %v skipped %v; want %d %v %v", passed, failed, skip, tt.passed, tt.failed, tt.skip)
			}
		})
	}
}
