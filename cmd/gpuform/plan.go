package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/fleet"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

func newPlanCommand(s Streams) *cobra.Command {
	var flags specFlags
	var conn connectFlags
	var targets []string
	var out string
	var asJSON, detailed bool
	cmd := &cobra.Command{
		Use:         "plan [DIR]",
		Annotations: graceful(),
		Short:       "Show what apply would change on every host",
		Long: `Plan probes every host of the spec in DIR (one remote command per host),
compares what it runs with what the spec says, and prints the changes the way
Terraform does: + create, ~ update in-place, - destroy, with each attribute's
value before -> after, and which changes need a reboot. Hosts with identical
plans are shown once, so a fleet plan stays readable.

With -out FILE the plan is saved together with each host's facts
fingerprint; "gpuform apply FILE" then runs exactly this plan, and refuses
when a host changed since.

Exit status: 0 success; 1 error (invalid spec, a host could not be probed);
with -detailed-exitcode, 2 when there are changes.`,
		Args: maxOneDir,
		RunE: jsonErrors(s, func() bool { return asJSON }, func(cmd *cobra.Command, args []string) error {
			dir := dirArg(args)
			cfg, diags := flags.loadPinned(s, dir)
			if err := reportLoad(s, diags, cfg, asJSON); err != nil {
				return err
			}
			// Check where the plan goes before probing a fleet for it.
			if out != "" {
				if fi, err := os.Stat(filepath.Dir(out)); err != nil || !fi.IsDir() {
					return fmt.Errorf("-out %s: the directory %s does not exist", out, filepath.Dir(out))
				}
			}
			p, err := makePlan(cmd.Context(), s, cfg, dir, targets, conn, !asJSON)
			if err != nil {
				return err
			}
			if out != "" {
				f, err := plan.NewFile(p, dir, flags.vars, targets, time.Now())
				if err != nil {
					return err
				}
				if err := plan.WriteFile(out, f); err != nil {
					return fmt.Errorf("writing the plan file: %w", err)
				}
			}
			if asJSON {
				if err := plan.RenderJSON(s.Out, p); err != nil {
					return err
				}
			} else {
				if err := plan.RenderText(s.Out, p, plan.RenderOptions{Color: s.Color(s.Out)}); err != nil {
					return err
				}
				if out != "" {
					fmt.Fprintf(s.Out, "\nSaved the plan to: %s\n\nTo perform exactly these actions, run:\n  gpuform apply %s\n", out, out)
				}
			}
			switch {
			case p.Errored:
				return exitError{ExitFailed}
			case detailed && p.HasChanges():
				return exitError{ExitReport}
			}
			return nil
		}),
	}
	flags.register(cmd.Flags())
	conn.register(cmd.Flags())
	conn.timeouts.registerProbe(cmd.Flags())
	cmd.Flags().StringArrayVar(&targets, "target", nil, "only these hosts (repeatable; ranges allowed: gpu[001-004])")
	cmd.Flags().StringVar(&out, "out", "", "save the plan to FILE for gpuform apply FILE")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 2 when there are changes")
	return cmd
}

// makePlan probes the targeted hosts of cfg and makes the plan.
func makePlan(ctx context.Context, s Streams, cfg *spec.Config, dir string, targets []string, conn connectFlags, progress bool) (*plan.Plan, error) {
	hosts, err := selectHosts(cfg, targets)
	if err != nil {
		return nil, err
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("the spec in %s has no hosts", dir)
	}
	if err := conn.refuseLocal(hosts, "plan would run its probe on the machine gpuform runs on"); err != nil {
		return nil, err
	}
	opts, err := conn.options(s, dir)
	if err != nil {
		return nil, err
	}
	connector := connectorFor(opts)
	var pt []plan.Target
	byName := map[string]spec.Host{}
	var names []string
	nodeOf := map[string]string{}
	for _, h := range hosts {
		if prev, dup := nodeOf[h.Host.Name]; dup {
			return nil, fmt.Errorf("host %s is in node %q and node %q; a host can follow only one node block", h.Host.Name, prev, h.Node.Name)
		}
		nodeOf[h.Host.Name] = h.Node.Name
		pt = append(pt, plan.Target{Host: h.Host, Node: h.Node})
		names = append(names, h.Host.Name)
		byName[h.Host.Name] = h.Host
	}
	var p fleet.Progress = fleet.Nop{}
	if progress {
		p = fleet.NewProgress(s.Err, "probing")
	}
	p = s.interrupts.trackFleet(p, "probing")
	var mu sync.Mutex
	got := map[string]*facts.Node{}
	errs := fleet.Run(ctx, names, conn.parallelism, func(ctx context.Context, name string) error {
		ctx, cancel := conn.timeouts.withProbeTimeout(ctx, byName[name])
		defer cancel()
		n, err := plan.ProbeHost(ctx, byName[name], connector)
		if err != nil {
			return err
		}
		mu.Lock()
		got[name] = n
		mu.Unlock()
		return nil
	}, p)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted while probing hosts")
	}
	probed := map[string]plan.Probed{}
	for _, name := range names {
		probed[name] = plan.Probed{Facts: got[name], Err: errs[name]}
		if errs[name] != nil {
			probed[name] = plan.Probed{Err: fmt.Errorf("%s", hostErrorText(errs[name]))}
		}
	}
	return plan.Make(cfg, pt, probed), nil
}

// connectorFor adapts the CLI's connection options to plan.Connector.
func connectorFor(opts connect.Options) plan.Connector {
	return func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		return connect.Open(ctx, h, opts)
	}
}
