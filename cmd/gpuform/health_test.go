package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/slurmtest"
)

// healthRun runs verify --local -slurm-drain as slurmd runs its
// HealthCheckProgram (bare environment, in /) with a spec of one node and
// the given health block; it returns the exit code, stdout and stderr.
func healthRun(t *testing.T, c *slurmtest.Cluster, healthBlock string, args ...string) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"gpu001\"]\n"+healthBlock+"\n}\n")
	cmd := exec.Command(os.Args[0], append(append([]string{"gpuform-cli", "verify", "--local", "-slurm-drain"}, args...), dir)...)
	cmd.Env = []string{c.Env(), "SLURMD_NODENAME=" + c.Node, "GPUFORM_HEALTH_STATE=" + filepath.Join(c.Dir, "health.json")}
	cmd.Dir = "/"
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// A monitor-class Xid (13: NVIDIA says restart the application) does not
// drain the node on sight; its third sighting within the window does, with
// a reason that says why, and the drain holds while the sightings stay in
// the window. A reboot-class Xid (79) drains on sight and says "reboot".
func TestSlurmHealthMonitorXidDrainsOnRepeat(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Options{NodeName: "gpu007"})
	const block = `  health {
    drain_after  = 3
    drain_window = "1h"
  }`
	xid13 := []string{"-mock-nvml", "dgxh100", "-mock-fault", "xid:0:13"}
	for i, want := range []string{"seen 1 of 3 times", "seen 2 of 3 times"} {
		code, out, errOut := healthRun(t, c, block, xid13...)
		state, reason := c.State()
		if code != ExitOK || strings.Contains(state, "DRAIN") || !strings.Contains(out, "watching node gpu007: Xid 13 "+want) {
			t.Fatalf("sighting %d: exit %d, state %q reason %q\n%s%s", i+1, code, state, reason, out, errOut)
		}
	}
	code, out, errOut := healthRun(t, c, block, xid13...)
	state, reason := c.State()
	if !strings.Contains(state, "DRAIN") || !strings.HasPrefix(reason, "gpuform: Xid 13: graphics engine exception seen 3 times in 1h0m0s (monitor class") {
		t.Fatalf("third sighting: exit %d, state %q reason %q\n%s%s", code, state, reason, out, errOut)
	}
	// A clean run within the window: the sightings still count, the
	// drain holds (no flapping back into service).
	_, out, _ = healthRun(t, c, block, "-mock-nvml", "dgxh100")
	if state, _ := c.State(); !strings.Contains(state, "DRAIN") || !strings.Contains(out, "stays drained") {
		t.Fatalf("clean run inside the window resumed the node: state %q\n%s", state, out)
	}

	// Reboot class on sight, on another node's state.
	c2 := slurmtest.Start(t, slurmtest.Options{NodeName: "gpu008"})
	code, out, errOut = healthRun(t, c2, "", "-mock-nvml", "dgxh100", "-mock-fault", "xid:4:79")
	state, reason = c2.State()
	if code != ExitReport || !strings.Contains(state, "DRAIN") || !strings.HasPrefix(reason, "gpuform: nvml.xid: reboot: fatal XID seen: XID 79 on gpu4 (GPU has fallen off the bus") {
		t.Fatalf("Xid 79: exit %d, state %q reason %q\n%s%s", code, state, reason, out, errOut)
	}
}

// The circuit breaker: with one of five Slurm nodes already drained by
// gpuform (20 %, above the default 10 %), a failing node is not drained and
// the run fails loudly; an admin's drain does not count. Raising
// max_drained_share lets the drain through.
func TestSlurmHealthCircuitBreaker(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Options{NodeName: "gpu001", OtherNodes: []string{"gpu002", "gpu003", "gpu004", "gpu005"}})
	c.DrainNode("gpu002", "gpuform: kernel.xid: reboot: Xid 79 at PCI:0000:9d:00")
	c.DrainNode("gpu003", "RMA ticket 4711")

	// No GPU on this machine: nvml.facts fails; its remedy asks whether
	// this is a GPU node (config), which still takes the node out.
	code, out, errOut := healthRun(t, c, "")
	state, reason := c.State()
	if code != ExitFailed || strings.Contains(state, "DRAIN") {
		t.Fatalf("breaker did not hold: exit %d, state %q reason %q\n%s%s", code, state, reason, out, errOut)
	}
	for _, want := range []string{"CIRCUIT BREAKER OPEN: not draining node gpu001", "1 of 5 Slurm nodes (20%) are already drained by gpuform", "max_drained_share = 0.1"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}

	code, out, errOut = healthRun(t, c, "  health {\n    max_drained_share = 0.25\n  }")
	state, reason = c.State()
	if code != ExitReport || !strings.Contains(state, "DRAIN") || !strings.HasPrefix(reason, "gpuform: nvml.facts: config: no NVIDIA GPU on the PCI bus") {
		t.Fatalf("drain under a raised share: exit %d, state %q reason %q\n%s%s", code, state, reason, out, errOut)
	}
}
