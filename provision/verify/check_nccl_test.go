//go:build cgo

package verify

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/verify/nccltest"
)

// TestNCCLShortSweep: a sweep that stops below the catalogue floor's
// message size (issue 27 item 7) is judged on its largest size when that
// size already clears the floor — busbw climbs with size, so the floor's
// size would clear it too; when it does not clear it, the run is an error
// that asks for the floor's size (-e 16G), not a failure of the node.
// Other rules fail it either way.
func TestNCCLShortSweep(t *testing.T) {
	c := mockCases()[1]
	exp := Expectation{KB: testKB, GPUModel: "H100", Interconnect: InterconnectNVSwitch, GPUCount: 8, NCCL: []NCCLExpectation{
		{Name: "short", Command: "all_reduce_perf -b 128M -e 512M -g 8"},
	}}
	full := parseFixture(t, "all_reduce_perf-8xH100-nvswitch-1node.txt")[0]
	// Keep the rows up to 512M (431.81/430.69 GB/s, under the catalogue's
	// 460 GB/s at 16G) and the footer: a complete run of a shorter sweep.
	short := full
	short.Rows = full.Rows[:3]
	corrupt := short
	corrupt.Rows = append([]nccltest.Row(nil), short.Rows...)
	three := int64(3)
	corrupt.Rows[1].InPlace.Wrong = &three
	tests := []struct {
		name     string
		run      nccltest.Run
		status   Status
		message  string
		observed string
	}{
		// The whole published run ends at 4G with 473.60 GB/s: it clears
		// the 460 GB/s floor read at 16G.
		{"ends at 4G above the 16G floor", full, StatusPass, "", "busbw 473.60 GB/s at 4G (the floor is for 16G; the run's largest size already clears it)"},
		{"ends at 512M below the 16G floor", short, StatusError, "busbw 430.69 GB/s at 512M, the run's largest size, is below the floor 460.00 GB/s, which is for 16G: the sweep ends too early to judge; extend it (-e 16G)", "busbw 430.69 GB/s at 512M"},
		{"short sweep with #wrong", corrupt, StatusFail, "#wrong", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := HostFacts{NCCL: map[string]nccltest.Result{"short": {Runs: []nccltest.Run{tt.run}}}}
			var got *CheckResult
			for _, r := range Check(exp, collectMock(t, c.mock), extra) {
				if r.ID == "nccl.short" {
					got = &r
				}
			}
			if got == nil || got.Status != tt.status || !strings.Contains(got.Message, tt.message) || !strings.Contains(got.Observed, tt.observed) {
				t.Errorf("%+v: want %s with message %q, observed %q", got, tt.status, tt.message, tt.observed)
			}
		})
	}
}

// TestNCCLNotValidated: a run with -c 0 counts no #wrong; a pass must not
// read as "#wrong 0" checked.
func TestNCCLNotValidated(t *testing.T) {
	c := mockCases()[1]
	exp := Expectation{KB: testKB, NCCL: []NCCLExpectation{{Name: "c0", Command: "all_reduce_perf -c 0", MinBusBWGBps: 1}}}
	tests := []struct {
		fixture string
		want    string
	}{
		{"all_reduce_perf-16xH100-2node-ib-srun-label-check0-degraded.txt", "not validated"},
		{"all_reduce_perf-8xH100-nvswitch-1node.txt", ""},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			extra := HostFacts{NCCL: map[string]nccltest.Result{"c0": {Runs: parseFixture(t, tt.fixture)}}}
			for _, r := range Check(exp, collectMock(t, c.mock), extra) {
				if r.ID != "nccl.c0" {
					continue
				}
				if r.Status != StatusPass {
					t.Fatalf("%+v: want a pass", r)
				}
				if got := strings.Contains(r.Observed, "not validated"); got != (tt.want != "") {
					t.Errorf("observed %q: want mention of no validation = %v", r.Observed, tt.want != "")
				}
			}
		})
	}
}

func TestNCCLChecks(t *testing.T) {
	c := mockCases()[1]
	exp := Expectation{KB: testKB, GPUModel: "H100", Interconnect: InterconnectNVSwitch, GPUCount: 8, NCCL: []NCCLExpectation{
		{Name: "spec_floor", Command: "all_reduce_perf -b 128M -e 4G -g 8", MinBusBWGBps: 450},
		{Name: "high_floor", Command: "all_reduce_perf -b 128M -e 4G -g 8", MinBusBWGBps: 480},
		// Catalogue floor (460 GB/s at 16G); the run stops at 4G, whose
		// 473.60 GB/s already clears it.
		{Name: "catalogue", Command: "all_reduce_perf -b 128M -e 4G -g 8"},
		{Name: "not_run", Command: "all_reduce_perf -g 8"},
	}}
	runs := parseFixture(t, "all_reduce_perf-8xH100-nvswitch-1node.txt")
	res := nccltest.Result{Runs: runs}
	extra := HostFacts{NCCL: map[string]nccltest.Result{"spec_floor": res, "high_floor": res, "catalogue": res}}
	got := map[string]CheckResult{}
	for _, r := range Check(exp, collectMock(t, c.mock), extra) {
		got[r.ID] = r
	}
	want := map[string]Status{"nccl.spec_floor": StatusPass, "nccl.high_floor": StatusFail, "nccl.catalogue": StatusPass, "nccl.not_run": StatusNotRun}
	for id, st := range want {
		if got[id].Status != st {
			t.Errorf("%s: %+v, want %s", id, got[id], st)
		}
	}
	if r := got["nccl.spec_floor"]; r.Observed != "busbw 473.60 GB/s at 4G" {
		t.Errorf("observed %q", r.Observed)
	}
	if r := got["nccl.catalogue"]; !strings.Contains(r.Expected, "460.00") || !strings.Contains(r.Observed, "the floor is for 16G") {
		t.Errorf("catalogue: %+v", r)
	}
}

// TestNCCLMissingBinary: a tier that cannot run its nccl-tests fails the
// gate, unless the spec marks nccl_tests optional; a program the test runs
// that is missing (not the test's own binary) fails either way.
func TestNCCLMissingBinary(t *testing.T) {
	missing := nccltest.Result{ExitCode: 127, NotInstalled: true, Failure: "all_reduce_perf not found on the node (is nccl-tests installed and on PATH?)"}
	noTimeout := nccltest.Result{ExitCode: 127, Failure: "exit status 127: a command was not found (timeout(1) and env(1) from coreutils must be on the node's PATH): timeout: not found"}
	tests := []struct {
		name     string
		res      nccltest.Result
		optional bool
		status   Status
		want     string
	}{
		{"required", missing, false, StatusFail, "not found on the node"},
		{"optional", missing, true, StatusSkip, "the spec marks nccl_tests optional"},
		{"optional, but timeout(1) missing", noTimeout, true, StatusFail, "timeout(1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := Expectation{KB: testKB, NCCLOptional: tt.optional, NCCL: []NCCLExpectation{{Name: "ar", Command: "all_reduce_perf -g 8", MinBusBWGBps: 100}}}
			res := Check(exp, nil, HostFacts{NCCL: map[string]nccltest.Result{"ar": tt.res}})
			got := res[len(res)-1]
			if got.ID != "nccl.ar" || got.Status != tt.status || !strings.Contains(got.Message, tt.want) {
				t.Errorf("%+v: want %s with %q", got, tt.status, tt.want)
			}
		})
	}
}
