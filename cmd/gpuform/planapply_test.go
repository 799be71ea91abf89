package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runCLIEnv runs the CLI in-process with extra environment.
func runPA(t *testing.T, env []string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb, Environ: append([]string{"NO_COLOR=1"}, env...)})
	return code, out.String(), errb.String()
}

// changingCalls are the calls a simulated node's stand-ins recorded other
// than the ones plan makes, which read only: the package listing of its
// probe (apt-cache madison, dnf list) and the Slurm state of its preview
// (scontrol show node, squeue).
func changingCalls(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "var/log/gpuform-sim/calls.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" || strings.HasPrefix(line, "apt-cache madison ") || strings.HasPrefix(line, "dnf -q -C list --showduplicates ") ||
			strings.HasPrefix(line, "scontrol -o show node ") || strings.HasPrefix(line, "squeue ") {
			continue
		}
		out = append(out, line)
	}
	return out
}

// TestPlanApplyPlan walks the quickstart journey on a simulated node:
// plan shows changes, a refused prompt changes nothing, apply converges,
// the next plan is empty, and a saved plan is refused once the host moved.
func TestPlanApplyPlan(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := "testdata/planapply"
	root := filepath.Join(state, "hgx-h100-stale")

	code, out, errOut := runPA(t, env, "", "plan", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(out, "Plan: 7 to add, 9 to change, 0 to destroy. Reboot required.") {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runPA(t, env, "", "plan", "-json", dir)
	var doc struct {
		FormatVersion string `json:"format_version"`
		Hosts         []struct {
			ResourceChanges []struct {
				Resource string   `json:"resource"`
				Actions  []string `json:"actions"`
			} `json:"resource_changes"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitOK || doc.FormatVersion != "2.4" || len(doc.Hosts) != 1 || len(doc.Hosts[0].ResourceChanges) == 0 {
		t.Fatalf("plan -json: exit %d, %v\n%s", code, err, out)
	}

	code, out, _ = runPA(t, env, "no\n", "apply", dir)
	if code != ExitFailed || !strings.Contains(out, "Only 'yes' will be accepted") || !strings.Contains(out, "Apply cancelled.") {
		t.Fatalf("apply answered no: exit %d\n%s", code, out)
	}
	if calls := changingCalls(t, root); len(calls) > 0 {
		t.Fatalf("a refused apply changed the node: %q", calls)
	}

	code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir)
	if code != ExitOK || !strings.Contains(out, "reboot pending") || !strings.Contains(out, "Apply finished on 1 host: 1 reboot pending.") {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}

	// Nothing is left to change, but the new driver waits for the reboot
	// the rollout did not allow: the host does not run the spec yet.
	code, out, _ = runPA(t, env, "", "plan", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(out, "No changes.") || !strings.Contains(out, "# driver_package: 550.127.08 installed, 535.183.06 loaded; reboot pending") {
		t.Fatalf("plan after apply, reboot pending: exit %d, want 2 naming installed and loaded\n%s", code, out)
	}
	code, out, _ = runPA(t, env, "", "plan", "-json", dir)
	type pendingJSON struct {
		Resource      string
		RebootPending bool   `json:"reboot_pending"`
		PendingReason string `json:"pending_reason"`
	}
	var pendingDoc struct {
		Hosts []struct {
			ResourceChanges []pendingJSON `json:"resource_changes"`
		}
	}
	if err := json.Unmarshal([]byte(out), &pendingDoc); code != ExitOK || err != nil || len(pendingDoc.Hosts) != 1 {
		t.Fatalf("plan -json after apply, reboot pending: exit %d, %v\n%s", code, err, out)
	}
	// The driver is the change that says why it waits (the others waiting
	// with it say only reboot_pending).
	var pending []pendingJSON
	for _, rc := range pendingDoc.Hosts[0].ResourceChanges {
		if rc.PendingReason != "" {
			pending = append(pending, rc)
		}
	}
	if diff := cmp.Diff([]pendingJSON{{"driver_package", true, "550.127.08 installed, 535.183.06 loaded"}}, pending); diff != "" {
		t.Fatalf("plan -json after apply, the pending reasons (-want +got):\n%s", diff)
	}

	planFile := filepath.Join(t.TempDir(), "gpuform.plan")
	code, out, _ = runPA(t, env, "", "plan", "-out", planFile, dir)
	if code != ExitOK || !strings.Contains(out, "gpuform apply "+planFile) {
		t.Fatalf("plan -out: exit %d\n%s", code, out)
	}
	// The operator tunes the host by hand after the plan was saved.
	if err := os.WriteFile(filepath.Join(root, "proc/sys/vm/swappiness"), []byte("30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runPA(t, env, "", "apply", planFile)
	if code != ExitFailed || !strings.Contains(errOut, "saved plan is stale: sim://hgx-h100-stale: the host changed since the plan was made") {
		t.Fatalf("apply of a stale plan: exit %d\n%s", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "proc/sys/vm/swappiness")); string(b) != "30\n" {
		t.Error("a stale plan changed the host")
	}

	// A fresh saved plan applies without a prompt.
	runPA(t, env, "", "plan", "-out", planFile, dir)
	code, out, errOut = runPA(t, env, "", "apply", planFile)
	if code != ExitOK || !strings.Contains(out, "reboot pending") {
		t.Fatalf("apply of a fresh plan file: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "proc/sys/vm/swappiness")); string(b) != "1\n" {
		t.Errorf("swappiness after apply = %q", b)
	}
}

func TestPlanUnknownTarget(t *testing.T) {
	code, _, errOut := runPA(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "", "plan", "-target", "gpu999", "testdata/planapply")
	if code != ExitFailed || !strings.Contains(errOut, "gpu999") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// apply does not change the machine gpuform runs on without -allow-local.
func TestApplyRefusesLocalHostUnlessAllowed(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"self\" {\n  hosts = [\"local://ci-runner\"]\n  sysctl = { \"vm.swappiness\" = 1 }\n}\n")
	code, _, errOut := runCLI(t, "", "apply", "-auto-approve", dir)
	if code != ExitFailed || !strings.Contains(errOut, "pass -allow-local") {
		t.Errorf("exit %d\n%s", code, errOut)
	}
}

// TestSavedPlanVarFileFromElsewhere saves a plan made with a relative
// -var-file and applies it from another directory: the plan file must name
// the variables file so that it is found from anywhere.
func TestSavedPlanVarFileFromElsewhere(t *testing.T) {
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	src, err := os.ReadFile("testdata/planapply/node.gpuform.hcl")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	writeSpec(t, work, map[string]string{
		"spec/node.gpuform.hcl": string(src),
		"vars.gpuvars.hcl":      "batch = 2\n",
		"elsewhere/.keep":       "",
	})
	t.Chdir(work)
	code, out, errOut := runPA(t, env, "", "plan", "-var-file", "vars.gpuvars.hcl", "-out", "x.plan", "spec")
	if code != ExitOK {
		t.Fatalf("plan -out: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Chdir(filepath.Join(work, "elsewhere"))
	code, out, errOut = runPA(t, env, "", "apply", "../x.plan")
	if code != ExitOK || strings.Contains(errOut, "vars.gpuvars.hcl") {
		t.Fatalf("apply ../x.plan from another directory: exit %d\n%s\n%s", code, out, errOut)
	}
}
