package apply_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/apply"
	"github.com/gpuform/gpuform/provision/plan/plantest"
)

// slurmState reads the simulated node's Slurm state and drain reason.
func slurmState(t *testing.T, f *plantest.Fleet, host string) (state, reason string) {
	t.Helper()
	dir := filepath.Join(f.Root(host), "var/lib/gpuform-sim/slurm")
	s, _ := os.ReadFile(filepath.Join(dir, "state"))
	r, _ := os.ReadFile(filepath.Join(dir, "reason"))
	return strings.TrimSpace(string(s)), strings.TrimSpace(string(r))
}

// indexOf returns the position of the first call starting with prefix.
func indexOf(calls []string, prefix string) int {
	for i, c := range calls {
		if strings.HasPrefix(c, prefix) {
			return i
		}
	}
	return -1
}

// With drain = "slurm" the host is drained before its first change, apply
// waits for running jobs to finish, and the host is resumed once converged.
func TestDrainWaitsForJobsAndResumes(t *testing.T) {
	t.Parallel()
	f := plantest.Start(t)
	cfg := loadSpec(t, "node.gpuform.hcl", []string{stale}, "max_failures = 1", "max_failures = 1\n    drain = \"slurm\"\n    reboot = \"allow\"")
	// The plan's Slurm preview (plan.Run), the state read before the drain
	// and two more after it see a job still running.
	jobs := filepath.Join(f.Root(stale), "var/lib/gpuform-sim/slurm/jobs")
	if err := os.MkdirAll(filepath.Dir(jobs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jobs, []byte("4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := opts(f)
	o.DrainPoll = time.Millisecond
	rep := apply.Apply(context.Background(), cfg, mustPlan(t, f, cfg), o)
	if h := rep.Hosts[0]; h.Status != apply.Rebooted {
		t.Fatalf("status %q: %s", h.Status, h.Error)
	}
	calls := f.Calls(stale)
	drain, firstStep, resume := indexOf(calls, "scontrol update NodeName="), indexOf(calls, "apt-get"), -1
	for i, c := range calls {
		if strings.Contains(c, "State=RESUME") {
			resume = i
		}
	}
	shows := 0
	for _, c := range calls[drain:firstStep] {
		if strings.HasPrefix(c, "scontrol -o show node") {
			shows++
		}
	}
	switch {
	case drain < 0 || !strings.Contains(calls[drain], "State=DRAIN"):
		t.Errorf("not drained first: %q", calls)
	case firstStep < drain || shows < 3:
		t.Errorf("changed the host before its jobs finished (%d state reads before the first step)", shows)
	case resume < indexOf(calls, "reboot"):
		t.Errorf("resumed before the reboot: %q", calls)
	}
	if state, _ := slurmState(t, f, stale); state != "IDLE" {
		t.Errorf("Slurm state after apply = %q, want IDLE (resumed)", state)
	}
}

// A host whose apply fails stays drained, with the reason; one whose jobs do
// not finish in time is not changed at all.
func TestDrainKeepsFailedHostsOut(t *testing.T) {
	t.Parallel()
	f := plantest.Start(t)
	cfg := loadSpec(t, "node.gpuform.hcl", []string{stale}, "max_failures = 1", "max_failures = 1\n    drain = \"slurm\"")
	jobs := filepath.Join(f.Root(stale), "var/lib/gpuform-sim/slurm/jobs")
	os.MkdirAll(filepath.Dir(jobs), 0o755)
	os.WriteFile(jobs, []byte("1000\n"), 0o644)
	o := opts(f)
	o.DrainPoll = time.Millisecond
	o.DrainTimeout = 20 * time.Millisecond
	before := len(f.Calls(stale))
	rep := apply.Apply(context.Background(), cfg, mustPlan(t, f, cfg), o)
	if h := rep.Hosts[0]; h.Status != apply.Failed || !strings.Contains(h.Error, "still has jobs") {
		t.Fatalf("drain timeout: %+v", h)
	}
	if i := indexOf(f.Calls(stale)[before:], "apt-get"); i >= 0 {
		t.Error("changed a host whose jobs were still running")
	}
	// The wait changed nothing: its own drain is lifted again.
	if state, reason := slurmState(t, f, stale); strings.Contains(state, "DRAIN") || reason != "" {
		t.Errorf("after a timed-out wait: state %q reason %q, want resumed", state, reason)
	}
	os.Remove(jobs)

	f.Fail(stale, "apt-get", "E: Unable to fetch some archives")
	rep = apply.Apply(context.Background(), cfg, mustPlan(t, f, cfg), o)
	if h := rep.Hosts[0]; h.Status != apply.Failed {
		t.Fatalf("want a failed step, got %+v", h)
	}
	state, reason := slurmState(t, f, stale)
	if state != "IDLE+DRAIN" || !strings.HasPrefix(reason, "gpuform: apply failed:") {
		t.Errorf("after a failed apply: state %q reason %q, want drained with the failure", state, reason)
	}
}
