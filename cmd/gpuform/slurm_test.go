package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/slurmtest"
	"github.com/gpuform/gpuform/provision/sim"
)

// slurmSpecDir writes a spec for the stale simulated node drained in
// Slurm as node gpu001, with extra rollout settings.
func slurmSpecDir(t *testing.T, rollout string) string {
	t.Helper()
	src, err := os.ReadFile("../../provision/apply/testdata/node.gpuform.hcl")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "max_failures = 1", "max_failures = 1\n    drain = \"slurm\"\n    reboot = \"allow\"\n    drain_poll = \"1s\"\n    slurm_node_name = \"gpu00{short}\"\n"+rollout, 1)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), text)
	return dir
}

// slurmSim starts a real Slurm and points the stale simulated node's
// scontrol and squeue at it; it returns the CLI environment.
func slurmSim(t *testing.T) (*slurmtest.Cluster, []string) {
	t.Helper()
	c := slurmtest.Start(t, slurmtest.Options{})
	state := t.TempDir()
	root, err := sim.MaterializeHost("sim://hgx-h100-stale/1", state)
	if err != nil {
		t.Fatal(err)
	}
	c.Wrap(filepath.Join(root, filepath.FromSlash(sim.BinDir)))
	return c, []string{"GPUFORM_SIM_STATE=" + state}
}

// The plan and the apply prompt say which hosts are drained and which an
// admin's drain keeps out; apply's summary says what it did in Slurm.
func TestSlurmPlanAndPromptListDrains(t *testing.T) {
	c, env := slurmSim(t)
	dir := slurmSpecDir(t, "")
	const host = "sim://hgx-h100-stale/1"

	code, out, errOut := runPA(t, env, "", "plan", dir)
	if code != ExitReport && code != ExitOK {
		t.Fatalf("plan: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, host+" (Slurm node gpu001, State=IDLE): drained before its changes, resumed when converged") {
		t.Errorf("plan does not say the host will be drained:\n%s", out)
	}
	code, out, _ = runPA(t, env, "no\n", "apply", dir)
	if code != ExitFailed || !strings.Contains(out, "Drained in Slurm first (and resumed when converged): "+host) {
		t.Errorf("prompt does not list the drained host (exit %d):\n%s", code, out)
	}

	const reason = "RMA ticket 4711: GPU3 XID 79, do not use"
	c.Drain(reason)
	code, out, _ = runPA(t, env, "", "plan", dir)
	if !strings.Contains(out, "left alone: out of service for someone else (Reason=\""+reason+"\")") {
		t.Errorf("plan does not say the admin-drained host is left alone (exit %d):\n%s", code, out)
	}
	code, out, _ = runPA(t, env, "", "apply", "-auto-approve", dir)
	if code != ExitFailed || !strings.Contains(out, "skipped") || !strings.Contains(out, reason) {
		t.Errorf("apply of an admin-drained host: exit %d\n%s", code, out)
	}
	if s, r := c.State(); !strings.Contains(s, "DRAIN") || r != reason {
		t.Errorf("after apply: state %q reason %q", s, r)
	}
}
