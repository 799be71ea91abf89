package main

import (
	"os"
	"os/exec"
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
	t.Parallel()
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

	// Health mode's drain (a fallen-off GPU) is not apply's to lift.
	const healthReason = "gpuform: health: nvml.xid: reboot: fatal XID seen: XID 79 on gpu4"
	c.Drain(healthReason)
	code, out, _ = runPA(t, env, "", "plan", dir)
	if !strings.Contains(out, "left alone: out of service for someone else (Reason=\""+healthReason+"\")") {
		t.Errorf("plan does not say the health-drained host is left alone (exit %d):\n%s", code, out)
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

// healthCheck runs verify --local -slurm-drain as slurmd runs its
// HealthCheckProgram: a process of its own with no PATH and no HOME, in /.
func healthCheck(t *testing.T, c *slurmtest.Cluster, args ...string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	// A fleet of this node alone: max_drained_share = 1 lets its drain
	// through the circuit breaker.
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\""+c.Node+"\"]\n  health {\n    max_drained_share = 1\n  }\n}\n")
	cmd := exec.Command(os.Args[0], append(append([]string{"gpuform-cli", "verify", "--local", "-slurm-drain"}, args...), dir)...)
	// Health mode's sightings live with the cluster, not in the test
	// machine's /var/lib/gpuform.
	cmd.Env = []string{c.Env(), "SLURMD_NODENAME=" + c.Node, "GPUFORM_HEALTH_STATE=" + filepath.Join(c.Dir, "health.json")}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// Health-check mode drains the node on a failed check with the check in
// the reason, resumes its own drain once the checks pass, and never
// touches an admin's drain.
func TestSlurmHealthCheckDrainAndResume(t *testing.T) {
	t.Parallel()
	c := slurmtest.Start(t, slurmtest.Options{NodeName: "gpu007"})
	// No GPU here: nvml.facts fails.
	code, out := healthCheck(t, c)
	state, reason := c.State()
	if code != ExitReport || !strings.Contains(state, "DRAIN") || !strings.HasPrefix(reason, "gpuform: health: nvml.facts: ") {
		t.Fatalf("failed check: exit %d, state %q reason %q\n%s", code, state, reason, out)
	}
	if !strings.Contains(out, "drained node gpu007") {
		t.Errorf("output does not say it drained the node:\n%s", out)
	}
	// A simulated healthy system passes: gpuform's own drain is lifted.
	code, out = healthCheck(t, c, "-mock-nvml", "dgxh100")
	if state, _ := c.State(); code != ExitOK || strings.Contains(state, "DRAIN") || !strings.Contains(out, "resumed node gpu007") {
		t.Fatalf("passing check: exit %d, state %q\n%s", code, state, out)
	}

	const admin = "RMA ticket 4711: GPU3 XID 79, do not use"
	c.Drain(admin)
	for _, args := range [][]string{nil, {"-mock-nvml", "dgxh100"}} {
		_, out = healthCheck(t, c, args...)
		if state, reason := c.State(); !strings.Contains(state, "DRAIN") || reason != admin {
			t.Errorf("%v: admin's drain touched: state %q reason %q", args, state, reason)
		}
		if !strings.Contains(out, "not health mode's") || !strings.Contains(out, "left alone") {
			t.Errorf("%v: output does not say the admin's drain was left alone:\n%s", args, out)
		}
	}
}

// A job's node list (SLURM_JOB_NODELIST's form, commas outside brackets)
// is accepted by hosts through a variable and by -target.
func TestSlurmNodeListHostsAndTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "variable \"nodes\" {\n  type = string\n}\n\nnode \"n\" {\n  hosts = [var.nodes]\n}\n")
	const list = "sim://hgx-h100-stale/[1-2],sim://l40s-rocky9"
	code, out, errOut := runCLI(t, "", "plan", "-var", "nodes="+list, dir)
	if code != ExitOK || !strings.Contains(out, "(3 hosts)") {
		t.Fatalf("plan of %s: exit %d\n%s%s", list, code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", "plan", "-var", "nodes="+list, "-target", "sim://hgx-h100-stale/[1-2],sim://l40s-rocky9", "-target", "sim://hgx-h100-stale/1", dir)
	if code != ExitOK || !strings.Contains(out, "(3 hosts)") {
		t.Errorf("-target with a node list: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", "plan", "-var", "nodes="+list, "-target", "sim://hgx-h100-stale/[2]", dir)
	if code != ExitOK || !strings.Contains(out, "(1 host)") {
		t.Errorf("-target one host: exit %d\n%s%s", code, out, errOut)
	}
}

// Slurm settings are checked by validate: durations, the foreign_drain
// word, the node-name template, and that they come with drain = "slurm".
func TestSlurmRolloutSettingsChecked(t *testing.T) {
	for _, tc := range []struct{ name, rollout, want string }{
		{"drain_timeout", "drain = \"slurm\"\n    drain_timeout = \"forever\"", "Invalid drain_timeout"},
		{"drain_poll", "drain = \"slurm\"\n    drain_poll = \"0s\"", "Invalid drain_poll"},
		{"foreign_drain", "drain = \"slurm\"\n    foreign_drain = \"resume\"", "foreign_drain"},
		{"template", "drain = \"slurm\"\n    slurm_node_name = \"{rack}{short}\"", "only {host} and {short}"},
		{"without drain", "slurm_client = \"ctl1\"", "slurm_client needs drain = \"slurm\""},
		{"reboot slurm without drain", "reboot = \"slurm\"", "reboot = \"slurm\" needs drain = \"slurm\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"gpu001\"]\n  rollout {\n    "+tc.rollout+"\n  }\n}\n")
			code, out, errOut := runCLI(t, "", "validate", dir)
			if code != ExitFailed || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, want %q:\n%s%s", code, tc.want, out, errOut)
			}
		})
	}
}
