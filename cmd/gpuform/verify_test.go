package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVerifySimulatedNodes(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}

	// The stale node runs an old driver with no fabric manager, and apply
	// never recorded its binding: verify fails those checks by id, and
	// exits 2.
	code, out, errOut := runCLIEnv(t, env, "verify", "-format", "json", "../../examples/quickstart")
	if code != ExitReport {
		t.Fatalf("quickstart: exit %d, want 2\n%s%s", code, out, errOut)
	}
	var doc struct {
		FormatVersion string `json:"format_version"`
		Hosts         []struct {
			Host   string
			Checks []struct{ ID, Status, Observed, Expected string }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	failed := map[string]string{}
	var drifted []string
	for _, c := range doc.Hosts[0].Checks {
		if c.Status != "fail" {
			continue
		}
		if r, ok := strings.CutPrefix(c.ID, "spec."); ok {
			drifted = append(drifted, r)
			continue
		}
		failed[c.ID] = c.Observed
	}
	if doc.FormatVersion == "" || failed["nvml.driver_version"] != "535.183.06" || failed["host.fabric_manager"] == "" || failed["bind.file"] != "absent" || len(failed) != 4 {
		t.Errorf("failed checks: %v", failed)
	}
	// The spec.* checks fail exactly the resources plan would change.
	if diff := cmp.Diff(plannedChanges(t, env, "../../examples/quickstart")["sim://hgx-h100-stale"], drifted); diff != "" {
		t.Errorf("spec.* failures are not plan's changes (-plan +verify):\n%s", diff)
	}

	// DGX A100 sim node as ci-preflight declares it: everything passes.
	code, out, _ = runCLIEnv(t, env, "verify", "../../examples/ci-preflight")
	if code != ExitOK || !strings.Contains(out, "Verify passed") {
		t.Errorf("ci-preflight: exit %d\n%s", code, out)
	}
	// JUnit to a file, with a summary line on stdout.
	junit := filepath.Join(t.TempDir(), "verify.xml")
	code, out, _ = runCLIEnv(t, env, "verify", "-format", "junit", "-out", junit, "../../examples/ci-preflight")
	if b, err := os.ReadFile(junit); code != ExitOK || err != nil || !strings.Contains(string(b), "<testsuites") || !strings.Contains(out, "Report written to") {
		t.Errorf("junit -out: exit %d %v\n%s", code, err, out)
	}
}

func TestVerifyFailures(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := t.TempDir()
	// A node without an NVIDIA driver has no NVML; a host that refuses SSH
	// is unreachable. Both are failed checks of their own host.
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `
inventory "dead" {
  hosts = ["127.0.0.1"]
  port  = 1
}
node "nodriver" {
  hosts = ["sim://no-driver"]
}
node "dead" {
  hosts = inventory.dead
}
`)
	code, out, _ := runCLIEnv(t, env, "verify", "-ssh-config", "none", dir)
	if code != ExitReport {
		t.Fatalf("exit %d, want 2\n%s", code, out)
	}
	for _, want := range []string{"no NVIDIA driver is loaded on sim://no-driver", "host.reachable", "Host 127.0.0.1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut := runCLIEnv(t, env, "verify", "-tier", "deep", dir); code != ExitFailed || !strings.Contains(errOut, "deep") {
		t.Errorf("bad tier: exit %d %s", code, errOut)
	}
}

func TestAgentCommand(t *testing.T) {
	code, out, errOut := runCLI(t, "", "agent", "nvml", "--json", "--mock", "dgxh100", "--fault", "pcie_x8:3")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Source string
		GPUs   []struct {
			Index int
			PCIe  *struct {
				CurrentWidth int `json:"current_width"`
			} `json:"pcie"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Source != "mock" || len(rep.GPUs) != 8 {
		t.Fatalf("agent output: %v\n%.300s", err, out)
	}
	if code, _, errOut := runCLI(t, "", "agent", "nvml", "--json", "--bogus", "1"); code != ExitFailed || errOut == "" {
		t.Errorf("bad agent flag: exit %d", code)
	}
}

// sim://no-driver has no NVML until apply installs a driver and the node
// reboots; then verify passes like on any other simulated HGX H100.
func TestVerifyNoDriverAfterApply(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	src, err := os.ReadFile("../../examples/quickstart/main.gpuform.hcl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), strings.ReplaceAll(string(src), "sim://hgx-h100-stale", "sim://no-driver"))
	if code, out, errOut := runCLIEnv(t, env, "verify", dir); code != ExitReport || !strings.Contains(out, "no NVIDIA driver is loaded") {
		t.Fatalf("before apply: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := runCLIEnv(t, env, "verify", dir); code != ExitOK {
		t.Errorf("after apply: exit %d\n%s", code, out)
	}
}

// plannedChanges runs `plan -json ARGS...` and returns, per host, the
// resources whose action is not no-op, in plan order.
func plannedChanges(t *testing.T, env []string, args ...string) map[string][]string {
	t.Helper()
	code, out, errOut := runCLIEnv(t, env, append([]string{"plan", "-json"}, args...)...)
	var doc struct {
		Hosts []struct {
			Host            string `json:"host"`
			ResourceChanges []struct {
				Resource string   `json:"resource"`
				Actions  []string `json:"actions"`
			} `json:"resource_changes"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitOK {
		t.Fatalf("plan -json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	got := map[string][]string{}
	for _, h := range doc.Hosts {
		for _, rc := range h.ResourceChanges {
			if len(rc.Actions) != 1 || rc.Actions[0] != "no-op" {
				got[h.Host] = append(got[h.Host], rc.Resource)
			}
		}
	}
	return got
}
