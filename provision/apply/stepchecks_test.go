package apply_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/apply"
	"github.com/gpuform/gpuform/provision/plan/plantest"
)

// TestApplyRechecksBeforeTheFirstStep: a step check that fails at apply
// time (the registry went away after the plan was made) fails the host
// before its first step: no step runs and no stand-in is called, and the
// error names the step and the check's reason.
func TestApplyRechecksBeforeTheFirstStep(t *testing.T) {
	f := plantest.Start(t)
	cfg := loadSpec(t, "node.gpuform.hcl", []string{stale})
	p := mustPlan(t, f, cfg)
	hp := p.Hosts[0]
	last := &hp.ResourceChanges[len(hp.ResourceChanges)-1]
	for i := len(hp.ResourceChanges) - 1; i >= 0 && len(last.Steps) == 0; i-- {
		last = &hp.ResourceChanges[i]
	}
	if len(last.Steps) == 0 {
		t.Fatal("the stale node's plan has no step")
	}
	// The last step's check fails: the whole host is refused, its first
	// step included.
	last.Steps[len(last.Steps)-1].Check = "echo 'container image r.example/a/b:1: registry r.example cannot be reached from this host' >&2\nexit 1\n"
	before := len(f.Calls(stale))
	rep := apply.Apply(context.Background(), cfg, p, opts(f))
	h := rep.Hosts[0]
	if h.Status != apply.Failed || h.StepsRun != 0 ||
		!strings.Contains(h.Error, "preflight, before the first step (nothing was changed): "+last.Resource+": ") ||
		!strings.Contains(h.Error, "registry r.example cannot be reached from this host") {
		t.Fatalf("apply: %+v", h)
	}
	if got := f.Calls(stale)[before:]; len(got) != 0 {
		t.Errorf("apply called stand-ins after a failed check: %q", got)
	}

	// A check that could not tell does not stop apply.
	last.Steps[len(last.Steps)-1].Check = "echo 'unchecked: no curl'\n"
	if rep = apply.Apply(context.Background(), cfg, p, opts(f)); rep.Hosts[0].StepsRun != rep.Hosts[0].StepsPlanned {
		t.Errorf("apply after an unchecked check: %+v", rep.Hosts[0])
	}
}
