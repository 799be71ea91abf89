package main

import (
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/provision/apply"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/spec"
)

// The views layer, after Terraform's internal/command/views: a command's
// work makes a typed model (the plan, the apply report) and knows nothing
// of the output format; a Human view and a JSON view render the model, and
// what the work reports while it runs (diagnostics, progress) goes
// through the view too. newPlanView and newApplyView pick the view from
// the arguments' viewType.

// operationView is what making a plan reports through while it runs, for
// plan and apply alike.
type operationView interface {
	// Diagnostics reports the diagnostics of loading the spec or selecting
	// its hosts, and returns the exit error when they hold an error.
	Diagnostics(diags hcl.Diagnostics, cfg *spec.Config) error
	// ShowsProbeProgress says whether probing the hosts shows its
	// progress on standard error.
	ShowsProbeProgress() bool
}

// humanOperation reports in text on standard error.
type humanOperation struct{ s Streams }

func (v humanOperation) Diagnostics(diags hcl.Diagnostics, cfg *spec.Config) error {
	return reportLoad(v.s, diags, cfg, false)
}

func (v humanOperation) ShowsProbeProgress() bool { return true }

// jsonOperation keeps standard output one JSON document: a spec that does
// not load is that document (failJSON), and no progress is shown.
type jsonOperation struct{ s Streams }

func (v jsonOperation) Diagnostics(diags hcl.Diagnostics, cfg *spec.Config) error {
	return reportLoad(v.s, diags, cfg, true)
}

func (v jsonOperation) ShowsProbeProgress() bool { return false }

// planView renders gpuform plan's result.
type planView interface {
	operationView
	// Plan renders the plan; savedTo is the -out file it was saved to,
	// "" when none.
	Plan(p *plan.Plan, savedTo string) error
}

func newPlanView(t viewType, s Streams) planView {
	if t == viewJSON {
		return planJSON{jsonOperation{s}}
	}
	return planHuman{humanOperation{s}}
}

type planHuman struct{ humanOperation }

func (v planHuman) Plan(p *plan.Plan, savedTo string) error {
	if err := plan.RenderText(v.s.Out, p, plan.RenderOptions{Color: v.s.Color(v.s.Out)}); err != nil {
		return err
	}
	if savedTo != "" {
		fmt.Fprintf(v.s.Out, "\nSaved the plan to: %s\n\nTo perform exactly these actions, run:\n  gpuform apply %s\n", savedTo, savedTo)
	}
	return nil
}

type planJSON struct{ jsonOperation }

func (v planJSON) Plan(p *plan.Plan, _ string) error { return plan.RenderJSON(v.s.Out, p) }

// applyView renders gpuform apply's results, in the order apply reaches
// them: the plan, a plan that failed, the progress of the steps, the
// report.
type applyView interface {
	operationView
	// Plan shows the plan apply is about to carry out.
	Plan(p *plan.Plan) error
	// PlanFailed reports that some hosts could not be planned, so nothing
	// was changed, and returns the exit error.
	PlanFailed(p *plan.Plan, cfg *spec.Config) error
	// Progress shows one of apply's events.
	Progress(e apply.Event)
	// Report renders the apply report: of the steps run, or of a plan
	// with nothing to do (noChanges).
	Report(rep *apply.Report, noChanges bool) error
}

// newApplyView picks the view; live is whether the human view replaces
// the per-step lines with one live progress line.
func newApplyView(t viewType, s Streams, live bool) applyView {
	if t == viewJSON {
		return applyJSON{jsonOperation{s}}
	}
	return &applyHuman{humanOperation: humanOperation{s}, live: live}
}

type applyHuman struct {
	humanOperation
	live     bool
	progress *apply.Progress
}

func (v *applyHuman) Plan(p *plan.Plan) error {
	v.progress = apply.NewProgress(v.s.Err, apply.ProgressOptions{Live: v.live, Hosts: len(p.Hosts), Width: v.s.Width(v.s.Err), Color: v.s.Color(v.s.Err)})
	return plan.RenderText(v.s.Out, p, plan.RenderOptions{Color: v.s.Color(v.s.Out)})
}

func (v *applyHuman) PlanFailed(*plan.Plan, *spec.Config) error {
	fmt.Fprintln(v.s.Err, "Error: some hosts could not be planned (see above); nothing was changed.")
	return exitError{ExitFailed}
}

func (v *applyHuman) Progress(e apply.Event) {
	if v.progress != nil {
		v.progress.Event(e)
	}
}

// Report ends the live line, then prints the report; with nothing to do
// the plan already said so.
func (v *applyHuman) Report(rep *apply.Report, noChanges bool) error {
	if noChanges {
		return nil
	}
	if v.progress != nil {
		v.progress.Finish()
	}
	apply.RenderText(v.s.Out, rep, apply.TextOptions{Color: v.s.Color(v.s.Out)})
	return nil
}

type applyJSON struct{ jsonOperation }

func (v applyJSON) Plan(*plan.Plan) error { return nil }

// PlanFailed writes each host's planning error as a diagnostic of the
// one JSON document.
func (v applyJSON) PlanFailed(p *plan.Plan, cfg *spec.Config) error {
	var diags hcl.Diagnostics
	for _, h := range p.Hosts {
		if h.Error != "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot plan host " + h.Host, Detail: h.Error})
		}
	}
	return failJSON(v.s, diags, cfg, errors.New("some hosts could not be planned; nothing was changed"))
}

func (v applyJSON) Progress(apply.Event) {}

func (v applyJSON) Report(rep *apply.Report, _ bool) error { return apply.RenderJSON(v.s.Out, rep) }
