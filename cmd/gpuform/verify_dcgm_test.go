package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpuform/gpuform/provision/sim"
)

// simWithDCGM materialises sim://dgx-a100 (8x A100, the machine of the
// published DCGM 3.3.3 run) in a fresh state directory and gives it a
// dcgmi that prints the published capture, whatever it is asked, as a
// node whose DCGM prints only the text table would.
func simWithDCGM(t *testing.T, capture string) []string {
	t.Helper()
	state := t.TempDir()
	root, err := sim.Materialize("dgx-a100", state)
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(filepath.Join("../../provision/verify/dcgm/testdata", capture))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\n# stand-in: replays a published dcgmi diag output\ncat '" + abs + "'\n"
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(sim.BinDir), "dcgmi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"GPUFORM_SIM_STATE=" + state}
}

// ciPreflightRequiringDCGM is examples/ci-preflight without its
// optional = ["dcgm"]: DCGM's results count.
func ciPreflightRequiringDCGM(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/ci-preflight/main.gpuform.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), `optional = ["dcgm"]`) {
		t.Fatal(`examples/ci-preflight no longer marks dcgm optional`)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), strings.Replace(string(src), `optional = ["dcgm"]`, "", 1))
	return dir
}

func dcgmChecks(checks []verifyCheck) map[string]verifyCheck {
	out := map[string]verifyCheck{}
	for _, c := range checks {
		if strings.HasPrefix(c.ID, "dcgm.") {
			out[c.ID] = c
		}
	}
	return out
}

// TestVerifyDCGMPublishedHealthyRun: the published healthy dcgmi diag -r 2
// of DCGM 3.3.3 on 8x A100 (tests reading "Pass - All") passes verify's
// quick tier, one check per DCGM test, none of them failed.
func TestVerifyDCGMPublishedHealthyRun(t *testing.T) {
	t.Parallel()
	env := simWithDCGM(t, "dcgmi-diag-r2-dcgm3.3.3-8xA100-p4de-healthy.txt")
	code, hosts, out := verifyJSON(t, env, "-tier", "quick", ciPreflightRequiringDCGM(t))
	checks := hosts["sim://dgx-a100"]
	if _, failed := failedIDs(checks); code != ExitOK || len(failed) != 0 {
		t.Fatalf("exit %d, failed %v\n%s", code, failed, out)
	}
	got := dcgmChecks(checks)
	want := []string{"dcgm.denylist", "dcgm.nvml_library", "dcgm.cuda_main_library", "dcgm.permissions_and_os_blocks", "dcgm.persistence_mode",
		"dcgm.environment_variables", "dcgm.page_retirement_row_remap", "dcgm.graphics_processes", "dcgm.inforom", "dcgm.pcie", "dcgm.gpu_memory"}
	if len(got) != len(want) {
		t.Errorf("dcgm checks %v, want %v", got, want)
	}
	for _, id := range want {
		if c, ok := got[id]; !ok || c.Status != "pass" {
			t.Errorf("%s: %+v", id, c)
		}
	}
	if c := got["dcgm.pcie"]; c.Observed != "Pass" {
		t.Errorf("dcgm.pcie observed %q, want Pass", c.Observed)
	}
}

// TestVerifyDCGMSkipAllIsSkip: a test DCGM reports "Skip - All" is a skip
// with DCGM's word for it, never a failure (and never a pass).
func TestVerifyDCGMSkipAllIsSkip(t *testing.T) {
	t.Parallel()
	env := simWithDCGM(t, "dcgmi-diag-r3-dcgm3.3.9-8xH200-healthy-eud-skip.txt")
	_, hosts, out := verifyJSON(t, env, "-tier", "quick", ciPreflightRequiringDCGM(t))
	checks := hosts["sim://dgx-a100"]
	if _, failed := failedIDs(checks); len(failed) != 0 {
		t.Errorf("failed %v\n%s", failed, out)
	}
	c := dcgmChecks(checks)["dcgm.eud_test"]
	if c.Status != "skip" || c.Observed != "Skip" || c.Message != "DCGM skipped the Stress test EUD Test" {
		t.Errorf("dcgm.eud_test: %+v", c)
	}
	if c := dcgmChecks(checks)["dcgm.targeted_power"]; c.Status != "pass" {
		t.Errorf("dcgm.targeted_power: %+v", c)
	}
}

// TestVerifyDCGMPublishedFailures: published failing runs fail on the test
// DCGM failed, in its section, with DCGM's whole warning text, and the
// Warning rows of a DCGM 4 table are not checks of their own.
func TestVerifyDCGMPublishedFailures(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		capture, failed, message string
	}{
		{"dcgmi-diag-r1-dcgm3.1.8-8xH200-persistence-mode-fail.txt", "dcgm.persistence_mode",
			"DCGM Deployment test Persistence Mode failed: Persistence mode for GPU 0 is currently disabled. The DCGM diagnostic requires peristence mode to be enabled."},
		{"dcgmi-diag-r2-dcgm4.2.3-4xL40S-pcie-fail-four-warnings.txt", "dcgm.pcie",
			"DCGM Integration test pcie failed: There was an internal error during the test: 'A child process (152) exited with non-zero status 1' Check DCGM and system logs for errors."},
	} {
		t.Run(tt.capture, func(t *testing.T) {
			t.Parallel()
			env := simWithDCGM(t, tt.capture)
			dir := ciPreflightRequiringDCGM(t)
			code, hosts, out := verifyJSON(t, env, "-tier", "quick", dir)
			checks := hosts["sim://dgx-a100"]
			if _, failed := failedIDs(checks); code != ExitReport || !cmp.Equal(failed, []string{tt.failed}) {
				t.Fatalf("exit %d, failed %v\n%s", code, failed, out)
			}
			if c := dcgmChecks(checks)[tt.failed]; !strings.HasPrefix(c.Message, tt.message) {
				t.Errorf("%s message %q", tt.failed, c.Message)
			}
			if _, ok := dcgmChecks(checks)["dcgm.warning"]; ok {
				t.Error("a Warning row became a check")
			}
			if _, text, _ := runCLIEnv(t, env, "verify", "-tier", "quick", dir); !strings.Contains(text, tt.failed) {
				t.Errorf("text report does not name %s:\n%s", tt.failed, text)
			}
		})
	}
}
