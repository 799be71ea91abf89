package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/fleet"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

func newFactsCommand(s Streams) *cobra.Command {
	var flags specFlags
	var conn connectFlags
	var targets []string
	var asJSON bool
	var root string
	cmd := &cobra.Command{
		Use:         "facts [DIR]",
		Annotations: graceful(),
		Short:       "Show what the hosts of a spec run today",
		Long: `Facts probes every host of the spec in DIR — one SSH exec per host — and prints
what it found: OS and kernel, loaded driver, installed packages, CUDA
toolkits, Docker and NVIDIA runtime configuration, /dev/shm, sysctls,
limits, huge pages, CPU governor, systemd units, NUMA nodes, PCI devices with
their PCIe path, and RDMA devices.

With --root PATH it probes an unpacked root filesystem on this machine
instead (a node image), and needs no spec.

Exit status: 0 every host probed; 1 a host could not be probed or the spec is
invalid.`,
		Args: maxOneDir,
		RunE: jsonErrors(s, func() bool { return asJSON }, func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if root != "" {
				if len(args) > 0 || len(targets) > 0 {
					return fmt.Errorf("--root probes a root filesystem and takes no spec directory or -target")
				}
				if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
					return fmt.Errorf("--root %s is not a directory", root)
				}
				abs, err := filepath.Abs(root)
				if err != nil {
					return err
				}
				if err := conn.timeouts.check(); err != nil {
					return err
				}
				o := conn.targetOptionsFor(s, connect.Options{}, false, "probing")
				pctx, cancel := transport.WithTimeout(ctx, o.ProbeLimit(spec.Host{}), "the probe", target.ProbeSetting)
				n, err := facts.Probe(pctx, local.New("root:"+abs), facts.Options{Reads: resource.Reads(), Root: abs})
				cancel()
				results := []facts.HostFacts{{Host: root, Facts: n}}
				if err != nil {
					results[0].Error = err.Error()
				}
				return writeFacts(s, asJSON, results)
			}
			dir := dirArg(args)
			cfg, diags := flags.load(s, dir)
			if err := reportLoad(s, diags, cfg, asJSON); err != nil {
				return err
			}
			hosts, err := selectHosts(s, cfg, dir, targets, asJSON)
			if err != nil {
				return err
			}
			if err := conn.refuseLocal(hosts, "facts would run its probe on the machine gpuform runs on (--root PATH probes a directory here)"); err != nil {
				return err
			}
			o, err := conn.targetOptions(s, dir, !asJSON, "probing")
			if err != nil {
				return err
			}
			// The listing on stdout says each host's error, once per
			// group of hosts; progress only says which hosts failed.
			o.Progress = errorsBelow{o.Progress}
			return writeFacts(s, asJSON, probeHosts(ctx, hosts, o))
		}),
	}
	flags.register(cmd.Flags())
	conn.register(cmd.Flags())
	conn.timeouts.registerProbe(cmd.Flags())
	cmd.Flags().StringArrayVar(&targets, "target", nil, "only these hosts (repeatable; ranges allowed: gpu[001-004])")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print facts as JSON")
	cmd.Flags().StringVar(&root, "root", "", "probe the root filesystem at PATH on this machine instead of the spec's hosts")
	return cmd
}

// probeHosts probes every host the way every command does and lists
// the results; each host's failure is its own, an interruption included
// (the hosts not probed say so).
func probeHosts(ctx context.Context, hosts []target.Host, o target.Options) []facts.HostFacts {
	probed, _ := target.Probe(ctx, hosts, o)
	out := make([]facts.HostFacts, 0, len(probed))
	for _, p := range probed {
		r := facts.HostFacts{Host: p.Host.Host.Name, Facts: p.Facts}
		if p.Host.Node != nil {
			r.Node = p.Host.Node.Name
		}
		if p.Err != nil {
			r.Error = target.ErrorText(p.Err)
		}
		out = append(out, r)
	}
	return out
}

func writeFacts(s Streams, asJSON bool, results []facts.HostFacts) error {
	if asJSON {
		if err := facts.RenderJSON(s.Out, results); err != nil {
			return err
		}
	} else {
		facts.RenderText(s.Out, results)
	}
	for _, r := range results {
		if r.Error != "" {
			return exitError{ExitFailed}
		}
	}
	return nil
}

// errorsBelow is a progress view that names failed hosts without their
// error, for commands whose report prints the error itself.
type errorsBelow struct{ fleet.Progress }

// HostDone reports a failure as "failed (see below)"; a host that was
// never started keeps its own error, which the counts depend on.
func (p errorsBelow) HostDone(host string, err error, elapsed time.Duration) {
	var ns *fleet.NotStartedError
	if err != nil && !errors.As(err, &ns) {
		err = errors.New("failed (see below)")
	}
	p.Progress.HostDone(host, err, elapsed)
}
