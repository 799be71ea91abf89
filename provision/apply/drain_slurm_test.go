package apply_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gpuform/gpuform/internal/slurmtest"
	"github.com/gpuform/gpuform/provision/apply"
	"github.com/gpuform/gpuform/provision/plan/plantest"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/spec"
)

// These tests drain the simulated node sim://hgx-h100-stale/1 in a real
// slurmctld, where this machine is the Slurm node gpu001
// (slurm_node_name = "gpu00{short}"). They do not call t.Parallel: they
// race Slurm's own timing (a slurmd registering late returns a DOWN node
// to service, an epilog's COMPLETING lasts seconds), which other tests'
// load on a 2-core machine shifts enough to fail them.

// slurmFleet starts a real Slurm and a fleet whose stale node runs the
// real scontrol and squeue against it.
func slurmFleet(t *testing.T, o slurmtest.Options) (*plantest.Fleet, *slurmtest.Cluster) {
	t.Helper()
	c := slurmtest.Start(t, o)
	f := plantest.Start(t)
	c.Wrap(filepath.Join(f.Root(stale), filepath.FromSlash(sim.BinDir)))
	return f, c
}

// slurmSpec is the stale node's spec with drain = "slurm" and extra
// rollout settings.
func slurmSpec(t *testing.T, rollout string) *spec.Config {
	t.Helper()
	return loadSpec(t, "node.gpuform.hcl", []string{stale}, "max_failures = 1",
		"max_failures = 1\n    drain = \"slurm\"\n    reboot = \"allow\"\n    drain_poll = \"1s\"\n    slurm_node_name = \"gpu00{short}\"\n"+rollout)
}

// events records apply's progress messages, and runs hook on each.
type events struct {
	mu   sync.Mutex
	msgs []string
	hook func(msg string)
}

func (e *events) progress(ev apply.Event) {
	e.mu.Lock()
	e.msgs = append(e.msgs, ev.Message)
	hook := e.hook
	e.mu.Unlock()
	if hook != nil {
		hook(ev.Message)
	}
}

// index is the position of the first message containing s, -1 if none.
func (e *events) index(s string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, m := range e.msgs {
		if strings.Contains(m, s) {
			return i
		}
	}
	return -1
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.msgs, "\n")
}

func applyWith(t *testing.T, f *plantest.Fleet, cfg *spec.Config, ctx context.Context, ev *events) apply.HostResult {
	t.Helper()
	p := mustPlan(t, f, cfg)
	o := opts(f)
	o.Progress = ev.progress
	return apply.Apply(ctx, cfg, p, o).Hosts[0]
}

func ranSteps(f *plantest.Fleet) bool {
	return indexOf(f.Calls(stale), "apt-get") >= 0
}

// An idle node is drained before the first step and resumed after.
func TestSlurmIdleDrainedAndResumed(t *testing.T) {
	f, c := slurmFleet(t, slurmtest.Options{})
	ev := &events{hook: func(msg string) {
		if strings.HasPrefix(msg, "step 1/") {
			if s, r := c.State(); !strings.Contains(s, "DRAIN") || !strings.HasPrefix(r, "gpuform: apply by") {
				t.Errorf("first step ran with the node in state %q reason %q, want drained by gpuform", s, r)
			}
		}
	}}
	h := applyWith(t, f, slurmSpec(t, ""), context.Background(), ev)
	if !h.OK() || h.Slurm != "drained and resumed" {
		t.Fatalf("apply: %+v\n%s", h, ev)
	}
	// slurmctld may flag NOT_RESPONDING for a moment on a loaded machine.
	if s, r := c.State(); !strings.HasPrefix(s, "IDLE") || strings.Contains(s, "DRAIN") || r != "" {
		t.Errorf("after apply: state %q reason %q, want IDLE (resumed) with no reason", s, r)
	}
}

// A busy node is changed only once its job has ended; the wait shows the
// state and the job id.
func TestSlurmBusyWaitsForJob(t *testing.T) {
	f, c := slurmFleet(t, slurmtest.Options{})
	// The job runs until apply has said it waits for it: a fixed-length
	// job could end before apply reaches the node on a loaded machine, and
	// the wait this test is about would not happen.
	release := filepath.Join(t.TempDir(), "job-may-end")
	id := c.Sbatch("while [ ! -e " + release + " ]; do sleep 0.2; done")
	ev := &events{hook: func(msg string) {
		if strings.Contains(msg, "(RUNNING)") {
			if err := os.WriteFile(release, nil, 0o644); err != nil {
				t.Error(err)
			}
		}
	}}
	h := applyWith(t, f, slurmSpec(t, ""), context.Background(), ev)
	if !h.OK() {
		t.Fatalf("apply: %+v\n%s", h, ev)
	}
	wait, drained, step := ev.index("jobs "+id+" (RUNNING)"), ev.index("is drained"), ev.index("step 1/")
	if wait < 0 || drained < wait || step < drained {
		t.Errorf("want a wait naming job %s, then drained, then the first step:\n%s", id, ev)
	}
}

// COMPLETING is not drained: the first step waits for the epilog.
func TestSlurmWaitsForCompletingEpilog(t *testing.T) {
	dir := t.TempDir()
	done := filepath.Join(dir, "epilog-done")
	release := filepath.Join(dir, "epilog-release")
	// The epilog lasts until apply has reported the node COMPLETING (the
	// hook below releases it then), at most 60 s. A fixed sleep raced the
	// plan's probe under load: the node was IDLE before apply looked.
	f, c := slurmFleet(t, slurmtest.Options{Epilog: "i=0; while [ ! -e " + release + " ] && [ $i -lt 300 ]; do sleep 0.2; i=$((i + 1)); done; touch " + done})
	c.Sbatch("sleep 1")
	c.WaitState("the node to be COMPLETING", func(s string) bool { return strings.Contains(s, "COMPLETING") })
	ev := &events{hook: func(msg string) {
		if strings.Contains(msg, "COMPLETING") {
			if err := os.WriteFile(release, nil, 0o644); err != nil {
				t.Errorf("release the epilog: %v", err)
			}
		}
		if strings.HasPrefix(msg, "step 1/") {
			if _, err := os.Stat(done); err != nil {
				t.Errorf("first step ran while the epilog was still running")
			}
		}
	}}
	h := applyWith(t, f, slurmSpec(t, ""), context.Background(), ev)
	if !h.OK() {
		t.Fatalf("apply: %+v\n%s", h, ev)
	}
	if ev.index("COMPLETING") < 0 {
		t.Errorf("the wait never showed COMPLETING:\n%s", ev)
	}
}

// Nodes out of service for someone else's reason are left alone.
func TestSlurmForeignLeftAlone(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		take         func(c *slurmtest.Cluster, reason string)
	}{
		{"admin drained", "RMA ticket 4711: GPU3 XID 79, do not use", (*slurmtest.Cluster).Drain},
		{"down", "PSU 2 failed", (*slurmtest.Cluster).Down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c := slurmFleet(t, slurmtest.Options{})
			tc.take(c, tc.reason)
			before, _ := c.State()
			cfg := slurmSpec(t, "")
			// The plan (plan.Run) reads the Slurm state itself.
			p := mustPlan(t, f, cfg)
			if sp := p.Hosts[0].Slurm; sp == nil || sp.Action != "skip" || sp.Reason != tc.reason {
				t.Errorf("plan: %+v, want skip with the admin's reason", sp)
			}
			h := apply.Apply(context.Background(), cfg, p, opts(f)).Hosts[0]
			if h.Status != apply.Skipped || !strings.Contains(h.Error, tc.reason) || !strings.Contains(h.Error, "gpu001") {
				t.Errorf("apply: %+v, want skipped naming the node and its reason", h)
			}
			if ranSteps(f) {
				t.Error("changed a node an admin took out of service")
			}
			if s, r := c.State(); s != before || r != tc.reason {
				t.Errorf("after apply: state %q reason %q, want %q %q as the admin left it", s, r, before, tc.reason)
			}
		})
	}
}

// With foreign_drain = "change" the node is changed and stays drained with
// the admin's reason.
func TestSlurmForeignReasonKept(t *testing.T) {
	f, c := slurmFleet(t, slurmtest.Options{})
	const reason = "RMA ticket 4711: GPU3 XID 79, do not use"
	c.Drain(reason)
	ev := &events{}
	h := applyWith(t, f, slurmSpec(t, `    foreign_drain = "change"`), context.Background(), ev)
	if !h.OK() || !ranSteps(f) {
		t.Fatalf("apply: %+v\n%s", h, ev)
	}
	if s, r := c.State(); !strings.Contains(s, "DRAIN") || r != reason {
		t.Errorf("after apply: state %q reason %q, want still drained with the admin's reason", s, r)
	}
}

// A failed apply leaves the node drained with a reason naming gpuform and
// the failure.
func TestSlurmFailedApplyStaysDrained(t *testing.T) {
	f, c := slurmFleet(t, slurmtest.Options{})
	f.Fail(stale, "apt-get", "E: Unable to fetch some archives")
	h := applyWith(t, f, slurmSpec(t, ""), context.Background(), &events{})
	if h.Status != apply.Failed {
		t.Fatalf("apply: %+v, want failed", h)
	}
	if s, r := c.State(); !strings.Contains(s, "DRAIN") || !strings.HasPrefix(r, "gpuform: apply failed:") {
		t.Errorf("after a failed apply: state %q reason %q", s, r)
	}
}

// An interrupted wait changes nothing and lifts its own drain; a drain
// gpuform left behind earlier, with nothing left to do, is resumed by the
// next apply, which says so.
func TestSlurmInterruptedWaitAndStaleDrain(t *testing.T) {
	f, c := slurmFleet(t, slurmtest.Options{})
	c.Sbatch("sleep 60")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := &events{hook: func(msg string) {
		if strings.HasPrefix(msg, "waiting for Slurm node") {
			cancel()
		}
	}}
	h := applyWith(t, f, slurmSpec(t, ""), ctx, ev)
	if h.Status != apply.Failed || !strings.Contains(h.Error, "interrupted") || !strings.Contains(h.Error, "resumed") {
		t.Fatalf("interrupted apply: %+v\n%s", h, ev)
	}
	if ranSteps(f) {
		t.Error("changed the node although the wait was interrupted")
	}
	if s, _ := c.State(); strings.Contains(s, "DRAIN") {
		t.Errorf("after an interrupted wait the node is %s, want resumed", s)
	}

	// Converge it with drain = "none", then leave a gpuform drain behind.
	plain := loadSpec(t, "node.gpuform.hcl", []string{stale}, "max_failures = 1", "max_failures = 1\n    reboot = \"allow\"")
	if h := apply.Apply(context.Background(), plain, mustPlan(t, f, plain), opts(f)).Hosts[0]; !h.OK() {
		t.Fatalf("converge: %+v", h)
	}
	c.Drain("gpuform: reboot pending after apply")
	ev = &events{}
	h = applyWith(t, f, slurmSpec(t, ""), context.Background(), ev)
	if !h.OK() || !strings.Contains(h.Slurm, "resumed") {
		t.Errorf("apply with nothing to do: %+v, want the stale drain resumed", h)
	}
	if s, _ := c.State(); strings.Contains(s, "DRAIN") {
		t.Errorf("stale gpuform drain not resumed: %s", s)
	}
	// An admin's drain is never resumed that way.
	c.Drain("RMA 1")
	if h := applyWith(t, f, slurmSpec(t, ""), context.Background(), &events{}); h.Slurm != "" {
		t.Errorf("apply touched an admin's drain: %+v", h)
	}
	if _, r := c.State(); r != "RMA 1" {
		t.Errorf("admin's reason now %q", r)
	}
}

// A slurm_node_name Slurm does not know fails with the name tried.
func TestSlurmUnknownNodeNamed(t *testing.T) {
	f, _ := slurmFleet(t, slurmtest.Options{})
	cfg := loadSpec(t, "node.gpuform.hcl", []string{stale}, "max_failures = 1", "max_failures = 1\n    drain = \"slurm\"\n    slurm_node_name = \"n-{short}-x\"")
	h := applyWith(t, f, cfg, context.Background(), &events{})
	if h.Status != apply.Failed || !strings.Contains(h.Error, `"n-1-x"`) {
		t.Errorf("apply: %+v, want a failure naming node \"n-1-x\"", h)
	}
	if ranSteps(f) {
		t.Error("changed a host it could not drain")
	}
}

// With slurm_client, scontrol runs on that host, not on the node (which
// here has no Slurm client at all), for a node name mapped from the host.
func TestSlurmClientHost(t *testing.T) {
	const client = "sim://l40s-rocky9"
	c := slurmtest.Start(t, slurmtest.Options{})
	f := plantest.Start(t)
	c.Wrap(filepath.Join(f.Root(client), filepath.FromSlash(sim.BinDir)))
	for _, tool := range []string{"scontrol", "squeue"} {
		p := filepath.Join(f.Root(stale), filepath.FromSlash(sim.BinDir), tool)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho 'no Slurm client on this node' >&2\nexit 127\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := applyWith(t, f, slurmSpec(t, `    slurm_client = "`+client+`"`), context.Background(), &events{})
	if !h.OK() || h.Slurm != "drained and resumed" {
		t.Fatalf("apply: %+v", h)
	}
	calls := strings.Join(f.Calls(client), "\n")
	if !strings.Contains(calls, "scontrol update NodeName=gpu001 State=DRAIN") || !strings.Contains(calls, "State=RESUME") {
		t.Errorf("client host did not drain and resume gpu001:\n%s", calls)
	}
}

// reboot = "slurm" hands the reboot to Slurm (scontrol reboot ASAP
// nextstate=RESUME) instead of rebooting the host itself.
func TestSlurmNativeReboot(t *testing.T) {
	f, c := slurmFleet(t, slurmtest.Options{})
	cfg := loadSpec(t, "node.gpuform.hcl", []string{stale}, "max_failures = 1",
		"max_failures = 1\n    drain = \"slurm\"\n    reboot = \"slurm\"\n    drain_poll = \"1s\"\n    slurm_node_name = \"gpu00{short}\"")
	ev := &events{}
	h := applyWith(t, f, cfg, context.Background(), ev)
	if h.Status != apply.RebootPending || !strings.Contains(h.Slurm, "scontrol reboot ASAP nextstate=RESUME") {
		t.Fatalf("apply: %+v\n%s", h, ev)
	}
	if indexOf(f.Calls(stale), "reboot") >= 0 {
		t.Error("apply rebooted the host itself")
	}
	if s, _ := c.State(); !strings.Contains(s, "REBOOT") {
		t.Errorf("Slurm state %q, want a reboot requested or issued", s)
	}
}
