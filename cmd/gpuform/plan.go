package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/spec"
)

func newPlanCommand(s Streams) *cobra.Command {
	a := &planArguments{}
	cmd := &cobra.Command{
		Use:         "plan [DIR]",
		Annotations: graceful(),
		Short:       "Show what apply would change on every host",
		Long: `Plan probes every host of the spec in DIR (one remote command per host,
which also lists what the host's package repositories offer of the
packages the spec installs there, from the metadata the host has), compares what it runs with what the spec says, and prints the changes the way
Terraform does: + create, ~ update in-place, - destroy, with each attribute's
value before -> after, and which changes need a reboot. Hosts with identical
plans are shown once, so a fleet plan stays readable.

A floating version ("580", "12.8") is resolved on each host to the release
its repositories offer, the way apply's package manager would pick it (the
release of it installed, else the newest offered), and shown with where it
came from: version = "535.183.06" -> "580.95.05" (from "580").

Before anything is applied, plan checks on each host what it can see in
advance: that its repositories offer every package release it will install
(a release none offers fails that host's plan, naming the package, the
release and the repositories), and for every container image it will pull
there, that the image's registry answers from the host (curl, 20 seconds at
most; an image the host already holds is not pulled). A host that fails a
check has no plan, and the error says why; apply checks again before its
first step.

Each host records which spec manages each resource gpuform put there, and
for sysctl, limits, kernel_cmdline, nccl_conf and docker_daemon each key
(/etc/gpuform/owners.json): several specs may set different keys of one
file. A spec removes only what it manages and no longer declares; a
resource or key another spec manages is an error for the host, unless
-take-over RESOURCE hands it to this spec.

With -out FILE the plan is saved together with each host's facts
fingerprint; "gpuform apply FILE" then runs exactly this plan, and refuses
when a host changed since.

Exit status: 0 success; 1 error (invalid spec, a host could not be probed);
with -detailed-exitcode, 2 when there are changes or a host waits for a
reboot to run what is installed (the plan says which release is installed
and which is loaded).`,
		Args: maxOneDir,
		RunE: jsonErrors(s, func() bool { return a.ViewType == viewJSON }, func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			v := newPlanView(a.ViewType, s)
			p, err := runPlan(cmd.Context(), s, a, v)
			if err != nil {
				return err
			}
			if err := v.Plan(p, a.OutPath); err != nil {
				return err
			}
			switch {
			case p.Errored:
				return exitError{ExitFailed}
			case a.DetailedExitCode && (p.HasChanges() || p.RebootPending()):
				return exitError{ExitReport}
			}
			return nil
		}),
	}
	a.register(cmd.Flags())
	return cmd
}

// runPlan is gpuform plan's work: it loads the spec, makes the plan and
// saves it to -out. It reports through v while it runs and returns the
// plan for v to render.
func runPlan(ctx context.Context, s Streams, a *planArguments, v operationView) (*plan.Plan, error) {
	cfg, diags := a.Spec.loadPinned(s, a.Dir)
	if err := v.Diagnostics(diags, cfg); err != nil {
		return nil, err
	}
	// Check where the plan goes before probing a fleet for it.
	if a.OutPath != "" {
		if fi, err := os.Stat(filepath.Dir(a.OutPath)); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("-out %s: the directory %s does not exist", a.OutPath, filepath.Dir(a.OutPath))
		}
	}
	b, err := openBundle(a.Dir, a.Bundle)
	if err != nil {
		return nil, err
	}
	defer b.close()
	p, err := makePlan(ctx, s, cfg, a.Dir, a.Targets, a.Conn, v, "plan would run its probe on the machine gpuform runs on", nil, b.hook())
	if err != nil {
		return nil, err
	}
	if v.ShowsProbeProgress() {
		b.copyNote(s.Err, p)
	}
	if a.OutPath != "" {
		f, err := plan.NewFile(p, a.Dir, a.Spec.vars, a.Targets, time.Now())
		if err != nil {
			return nil, err
		}
		f.TakeOver = a.Spec.takeOver
		if err := plan.WriteFile(a.OutPath, f); err != nil {
			return nil, fmt.Errorf("writing the plan file: %w", err)
		}
	}
	return p, nil
}

// makePlan probes the targeted hosts of cfg and makes the plan (plan.Run,
// Slurm preview included), reporting through v; refusal
// says what would happen to a local:// host without -allow-local. pins,
// for apply of a saved plan, are the package releases it resolved
// (plan.SavedReleases): the plan resolves those and no others.
func makePlan(ctx context.Context, s Streams, cfg *spec.Config, dir string, targets []string, conn connectFlags, v operationView, refusal string, pins map[string]map[string]string, hook plan.ProbedHook) (*plan.Plan, error) {
	hosts, err := selectHosts(cfg, dir, targets, v)
	if err != nil {
		return nil, err
	}
	if err := conn.refuseLocal(hosts, refusal); err != nil {
		return nil, err
	}
	o, err := conn.targetOptions(s, dir, v.ShowsProbeProgress(), "probing")
	if err != nil {
		return nil, err
	}
	k, err := s.KB()
	if err != nil {
		return nil, err
	}
	return plan.RunProbed(ctx, k, hosts, o, pins, hook)
}
