package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/provision/apply"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/transport"
)

func newApplyCommand(s Streams) *cobra.Command {
	a := &applyArguments{}
	cmd := &cobra.Command{
		Use:         "apply [DIR|PLANFILE]",
		Annotations: graceful(),
		Short:       "Change the hosts to match the spec",
		Long: `Apply makes the hosts of the spec in DIR match it. It first makes and shows
the plan, asks for confirmation (unless -auto-approve), then on each host:
takes a lock (/run/gpuform.lock; a second apply on the same host fails at
once, or waits up to -lock-timeout for it), runs the changes in dependency order, writing every file atomically
with a timestamped backup under /var/lib/gpuform/backup, stops at the first
failed step, and probes the host again to check that everything converged.

Hosts are changed in batches of the node's rollout { batch }; no new batch
starts once more than rollout { max_failures } hosts failed. A host that
needs a reboot is rebooted only with rollout { reboot = "allow" }; otherwise
it is reported as "reboot pending". Ctrl-C starts no new host and lets each
host in flight finish its current step.

Before the first step on any host, apply makes the plan again, which checks
that every package release it installs is offered by each host's
repositories; a host that fails it fails the whole apply with nothing
changed.

Given a PLANFILE saved by "gpuform plan -out", apply runs that plan without
asking, installs exactly the package releases it showed, and refuses it
when a host or the spec changed since, or a release it pins is no longer
offered.

Exit status: 0 every host converged; 1 otherwise.`,
		Args: maxOneDir,
		RunE: jsonErrors(s, func() bool { return a.ViewType == viewJSON }, func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			// On a terminal one live line replaces the per-step lines (32
			// hosts make hundreds of them); -verbose, or output to a file
			// or a pipe, keeps them.
			live := !a.Verbose && s.IsTerminal(s.Out) && s.IsTerminal(s.Err)
			return runApply(cmd.Context(), s, a, newApplyView(a.ViewType, s, live))
		}),
	}
	a.register(cmd.Flags())
	return cmd
}

// runApply is gpuform apply's work: it makes the plan (or checks a saved
// one against a fresh one), asks for confirmation, applies it and returns
// the exit error. Everything it shows goes through v, in the order apply
// reaches it.
func runApply(ctx context.Context, s Streams, a *applyArguments, v applyView) error {
	dir, specFlags, targets := a.Dir, a.Spec, a.Targets
	var saved *plan.File
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		f, err := plan.ReadFile(dir)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		if len(specFlags.vars) > 0 || len(targets) > 0 || len(specFlags.takeOver) > 0 {
			return fmt.Errorf("a saved plan carries its own variables, targets and take-overs; -var, -var-file, -target and -take-over do not apply")
		}
		saved = f
		dir = f.SpecDir
		specFlags.vars = f.VarArgs
		targets = f.Targets
		specFlags.takeOver = f.TakeOver
	}
	if a.ViewType == viewJSON && saved == nil && !a.AutoApprove {
		return fmt.Errorf("-json cannot ask for confirmation: add -auto-approve, or apply a saved plan file")
	}
	cfg, diags := specFlags.loadPinned(s, dir)
	if err := v.Diagnostics(diags, cfg); err != nil {
		return err
	}
	// A saved plan's resolved releases are what apply installs:
	// the fresh plan resolves exactly those, or refuses a host
	// whose repositories no longer offer one.
	var pins map[string]map[string]string
	if saved != nil {
		pins = plan.SavedReleases(saved.Plan)
	}
	b, err := openBundle(dir, a.Bundle)
	if err != nil {
		return err
	}
	defer b.close()
	p, err := makePlan(ctx, s, cfg, dir, targets, a.Conn, v, "apply would change the machine gpuform runs on", pins, b.hook())
	if err != nil {
		return err
	}
	k, err := s.KB()
	if err != nil {
		return err
	}
	if saved != nil {
		if err := plan.CheckSaved(saved.Plan, p); err != nil {
			return err
		}
	}
	if err := v.Plan(p); err != nil {
		return err
	}
	if a.ViewType != viewJSON {
		b.copyNote(s.Err, p)
	}
	if p.Errored {
		return v.PlanFailed(p, cfg)
	}
	if !p.HasChanges() && !hasPendingReboot(p) && len(plan.SlurmHosts(p, plan.SlurmResumeStale)) == 0 {
		// Nothing to do: Apply connects to no host, and its report says
		// so for each.
		return v.Report(apply.Apply(ctx, cfg, p, apply.Options{KB: k}), true)
	}
	if saved == nil && !a.AutoApprove && p.HasChanges() {
		// Nothing has changed yet, and the prompt's read cannot
		// be cancelled: a signal here ends apply at once.
		s.interrupts.setGraceful(false)
		ok := confirm(s, p)
		s.interrupts.setGraceful(true)
		if !ok {
			fmt.Fprintln(s.Out, "\nApply cancelled.")
			return exitError{ExitFailed}
		}
	}
	o, err := a.Conn.targetOptions(s, dir, false, "applying")
	if err != nil {
		return err
	}
	progress := func(e apply.Event) {
		if e.Done {
			s.interrupts.doing(e.Host, "")
		} else {
			s.interrupts.doing(e.Host, transport.HostText(e.Message))
		}
		v.Progress(e)
	}
	rep := apply.Apply(ctx, cfg, p, apply.Options{
		KB:          k,
		Target:      o,
		Progress:    progress,
		StepTimeout: a.Conn.timeouts.stepLimit(),
		LockTimeout: a.LockTimeout,
		Stage:       b.stage(progress),
	})
	if err := v.Report(rep, false); err != nil {
		return err
	}
	if !rep.Converged() {
		return exitError{ExitFailed}
	}
	return nil
}

func hasPendingReboot(p *plan.Plan) bool {
	for _, h := range p.Hosts {
		if h.RebootPending {
			return true
		}
	}
	return false
}

// confirm asks the operator, Terraform's way: only "yes" approves.
func confirm(s Streams, p *plan.Plan) bool {
	n := 0
	for _, h := range p.Hosts {
		if h.HasChanges() {
			n++
		}
	}
	slurmNote := ""
	if d := plan.SlurmHosts(p, plan.SlurmDrain); len(d) > 0 {
		slurmNote += "\n  Drained in Slurm first (and resumed when converged): " + plan.FoldHosts(d) + "."
	}
	if d := plan.SlurmHosts(p, plan.SlurmChangeForeign); len(d) > 0 {
		slurmNote += "\n  Changed while out of service for someone else, and left so: " + plan.FoldHosts(d) + "."
	}
	if d := plan.SlurmHosts(p, plan.SlurmSkipForeign); len(d) > 0 {
		slurmNote += "\n  Left alone (out of service in Slurm for someone else's reason): " + plan.FoldHosts(d) + "."
	}
	fmt.Fprintf(s.Out, "\nDo you want to perform these actions on %d %s?\n  gpuform will perform the actions described above.%s\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ", n, map[bool]string{true: "host", false: "hosts"}[n == 1], slurmNote)
	if s.In == nil {
		return false
	}
	line, err := bufio.NewReader(s.In).ReadString('\n')
	if err != nil && err != io.EOF {
		return false
	}
	return strings.TrimSpace(line) == "yes"
}
