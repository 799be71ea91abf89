package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// verifyDoc is what these tests read of verify -json.
type verifyDoc struct {
	Hosts []struct {
		Host   string `json:"host"`
		Checks []struct {
			ID      string `json:"id"`
			Status  string `json:"status"`
			Needed  bool   `json:"needed"`
			Message string `json:"message"`
			Remedy  *struct {
				Meaning string `json:"meaning"`
				Action  string `json:"action"`
				Do      string `json:"do"`
			} `json:"remedy"`
		} `json:"checks"`
	} `json:"hosts"`
	Summary struct {
		HostsFailed int `json:"hosts_failed"`
		Skipped     int `json:"skipped"`
		NotRun      int `json:"not_run"`
	} `json:"summary"`
}

func parseVerify(t *testing.T, out string) verifyDoc {
	t.Helper()
	var d verifyDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.Hosts) != 1 {
		t.Fatalf("verify -json: %v\n%s", err, out)
	}
	return d
}

// TestQuickstartQuickTierWithoutDCGM is issue 27's "What was seen" item 9:
// the quickstart installs no DCGM, so once applied its node passes
// verify -tier quick, dcgm.diag skipped with the reason, never silently;
// a spec that pins DCGM still fails a node without dcgmi.
func TestQuickstartQuickTierWithoutDCGM(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	quick := "../../examples/quickstart"
	// The plan says it first.
	note := "# verify: dcgm: optional, the spec installs no DCGM"
	if code, out, _ := runCLIEnv(t, env, "plan", quick); code != ExitOK || !strings.Contains(out, note) {
		t.Errorf("plan of a spec without DCGM: exit %d, want the note %q\n%s", code, note, out)
	}
	code, out, _ := runCLIEnv(t, env, "plan", "-json", quick)
	type hostNotes struct {
		VerifyNotes []string `json:"verify_notes"`
	}
	var notes struct{ Hosts []hostNotes }
	if err := json.Unmarshal([]byte(out), &notes); code != ExitOK || err != nil {
		t.Errorf("plan -json of a spec without DCGM: exit %d, %v\n%s", code, err, out)
	}
	wantNotes := []hostNotes{{[]string{"dcgm: optional, the spec installs no DCGM (verify -tier quick skips dcgm.diag on a host without dcgmi)"}}}
	if diff := cmp.Diff(wantNotes, notes.Hosts); diff != "" {
		t.Errorf("plan -json of a spec without DCGM: verify_notes (-want +got):\n%s", diff)
	}
	if _, out, _ := runCLIEnv(t, env, "plan", "testdata/gate-dcgm-pinned"); strings.Contains(out, note) {
		t.Errorf("plan of a spec pinning DCGM says it is optional:\n%s", out)
	}
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", quick); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := runCLIEnv(t, env, "verify", "-tier", "quick", quick)
	if code != ExitOK {
		t.Fatalf("verify -tier quick of the applied quickstart: exit %d, want 0\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "  skip   dcgm.diag") || !strings.Contains(out, "dcgm: optional, the spec installs no DCGM") {
		t.Errorf("the skip of dcgm.diag does not say why:\n%s", out)
	}

	code, out, _ = runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "verify", "-tier", "quick", "-json", "testdata/gate-dcgm-pinned")
	if code != ExitReport {
		t.Fatalf("verify -tier quick of a spec pinning DCGM on a node without it: exit %d, want 2\n%s", code, out)
	}
	for _, c := range parseVerify(t, out).Hosts[0].Checks {
		if c.ID == "dcgm.diag" && (c.Status != "fail" || !strings.Contains(c.Message, "the spec pins DCGM")) {
			t.Errorf("dcgm.diag: %+v, want a failure: the spec pins DCGM", c)
		}
	}
}

// TestVerifyRemediesAreTrue is the rest of item 9: a node with GPUs and no
// driver is told to install the driver, not to "drain and reboot"; an
// unreachable host gets the SSH error and "check the host is up and
// reachable", not "the source gives no action".
func TestVerifyRemediesAreTrue(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	code, out, _ := runCLIEnv(t, env, "verify", "testdata/gate-no-driver")
	if code != ExitReport || !strings.Contains(out, "8 NVIDIA GPU(s) on the PCI bus, but no NVIDIA driver is loaded") ||
		!strings.Contains(out, "what to do:    install the driver") || strings.Contains(out, "drain and reboot") {
		t.Errorf("no driver: exit %d\n%s", code, out)
	}

	code, out, _ = runCLIEnv(t, env, "verify", "testdata/gate-unreachable")
	if code != ExitReport || !strings.Contains(out, "connection refused") ||
		!strings.Contains(out, "what to do:    check the host is up and reachable") || strings.Contains(out, "the source gives no action") {
		t.Errorf("unreachable: exit %d\n%s", code, out)
	}
}

// TestVerifyNotRunIsNotPassed: a check left to a deeper tier is "not run",
// counted apart from skips and passes, and does not fail the host; a
// multi-node test the fleet tier needs, with no run for the host (here
// --local, which never runs one), is "not run" and needed: the host has
// not passed, and verify exits 2. Before, both were "skip" and passed.
func TestVerifyNotRunIsNotPassed(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	code, out, errOut := runCLIEnv(t, env, "verify", "-json", "testdata/gate-fleet-local")
	d := parseVerify(t, out)
	found := false
	for _, c := range d.Hosts[0].Checks {
		if c.ID == "nccl.fleet" {
			found = true
			if c.Status != "not run" || c.Needed || !strings.HasPrefix(c.Message, "not run at -tier probe") {
				t.Errorf("probe tier: %+v, want not run, left to -tier fleet", c)
			}
		}
	}
	if !found || d.Summary.NotRun != 1 || d.Summary.HostsFailed != 0 || code != ExitOK {
		t.Errorf("probe tier: exit %d, summary %+v, nccl.fleet found %v\n%s\n%s", code, d.Summary, found, out, errOut)
	}

	code, out, errOut = runCLIEnv(t, env, "verify", "--local", "-mock-nvml", "dgxh100", "-tier", "fleet", "-json", "testdata/gate-fleet-local")
	d = parseVerify(t, out)
	found = false
	for _, c := range d.Hosts[0].Checks {
		if c.ID == "nccl.fleet" {
			found = true
			if c.Status != "not run" || !c.Needed || c.Remedy == nil || !strings.Contains(c.Remedy.Meaning, "not verified") {
				t.Errorf("fleet tier, --local: %+v, want not run and needed, with a remedy saying the host is not verified", c)
			}
		}
	}
	if !found || code != ExitReport || d.Summary.HostsFailed != 1 {
		t.Errorf("fleet tier, --local: exit %d, want 2; summary %+v\n%s\n%s", code, d.Summary, out, errOut)
	}
}

// hasNVIDIAGPU reports whether this machine has an NVIDIA GPU on its PCI
// bus (vendor 0x10de, class 0x0300 or 0x0302), as the facts probe counts.
func hasNVIDIAGPU(t *testing.T) bool {
	t.Helper()
	devs, _ := filepath.Glob("/sys/bus/pci/devices/*")
	for _, d := range devs {
		v, _ := os.ReadFile(filepath.Join(d, "vendor"))
		c, _ := os.ReadFile(filepath.Join(d, "class"))
		if strings.TrimSpace(string(v)) == "0x10de" && (strings.HasPrefix(string(c), "0x0300") || strings.HasPrefix(string(c), "0x0302")) {
			return true
		}
	}
	return false
}

// TestVerifyLocalWithoutGPU is item 9's "a machine without a GPU is told to
// drain and reboot the node": verify --local on a machine with no NVIDIA
// GPU on its PCI bus (a CI runner, a laptop) asks whether it is a GPU
// node. It runs the CLI as a process of its own, as Slurm would.
func TestVerifyLocalWithoutGPU(t *testing.T) {
	t.Parallel()
	if hasNVIDIAGPU(t) {
		t.Skip("this machine has an NVIDIA GPU on its PCI bus")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"gpu001\"]\n}\n")
	cmd := exec.Command(os.Args[0], "gpuform-cli", "verify", "--local", dir)
	cmd.Env = []string{"NO_COLOR=1", "PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != ExitReport {
		t.Fatalf("exit %v, want 2\n%s", err, out)
	}
	for _, want := range []string{"FAIL   nvml.facts", "no NVIDIA GPU on the PCI bus", "what to do:    no NVIDIA GPU found: is this a GPU node? check the driver is installed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the report does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "drain and reboot") {
		t.Errorf("a machine without a GPU is told to drain and reboot:\n%s", out)
	}
}
