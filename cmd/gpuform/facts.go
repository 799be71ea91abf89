package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/internal/memlimit"
	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/fleet"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// factsArguments are the arguments of gpuform facts.
type factsArguments struct {
	// Dir is the spec directory, "." when omitted.
	Dir string
	// Spec are -var and -var-file.
	Spec specFlags
	// Conn are the connection flags and -probe-timeout.
	Conn connectFlags
	// Targets are the -target hosts; none means every host.
	Targets []string
	// Root is --root: an unpacked root filesystem probed instead of the
	// spec's hosts, "" for none.
	Root string
	// ViewType is -json's.
	ViewType viewType

	json bool
}

func (a *factsArguments) register(fs *pflag.FlagSet) {
	a.Spec.register(fs)
	a.Conn.register(fs)
	a.Conn.timeouts.registerProbe(fs)
	fs.StringArrayVar(&a.Targets, "target", nil, "only these hosts (repeatable; ranges allowed: gpu[001-004])")
	fs.BoolVar(&a.json, "json", false, "print facts as JSON")
	fs.StringVar(&a.Root, "root", "", "probe the root filesystem at PATH on this machine instead of the spec's hosts")
}

// finish refuses a spec directory or -target beside --root.
func (a *factsArguments) finish(_ *pflag.FlagSet, args []string) error {
	a.ViewType = viewTypeOf(a.json)
	if a.Root != "" && (len(args) > 0 || len(a.Targets) > 0) {
		return fmt.Errorf("--root probes a root filesystem and takes no spec directory or -target")
	}
	a.Dir = dirArg(args)
	return nil
}

// parseFactsArguments parses gpuform facts's command line (after "facts").
func parseFactsArguments(args []string) (*factsArguments, error) {
	a := &factsArguments{}
	return a, parseArguments(args, a.register, maxOneDir, a.finish)
}

func newFactsCommand(s Streams) *cobra.Command {
	a := &factsArguments{}
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
		RunE: jsonErrors(s, func() bool { return a.ViewType == viewJSON }, func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			defer memlimit.FleetProbe().Apply(s.Getenv)()
			v := newFactsView(a.ViewType, s)
			failed, err := runFacts(cmd.Context(), s, a, v)
			if err != nil {
				return err
			}
			if failed {
				return exitError{ExitFailed}
			}
			return nil
		}),
	}
	a.register(cmd.Flags())
	return cmd
}

// runFacts is gpuform facts's work: it probes the spec's hosts, or the
// --root directory, and hands each host's result (a host's failure is its
// own result) to v's report as the host is done. failed says whether some
// host could not be probed.
func runFacts(ctx context.Context, s Streams, a *factsArguments, v factsView) (failed bool, err error) {
	if a.Root != "" {
		if fi, err := os.Stat(a.Root); err != nil || !fi.IsDir() {
			return false, fmt.Errorf("--root %s is not a directory", a.Root)
		}
		abs, err := filepath.Abs(a.Root)
		if err != nil {
			return false, err
		}
		if err := a.Conn.timeouts.check(); err != nil {
			return false, err
		}
		o := a.Conn.targetOptionsFor(s, connect.Options{}, false, "probing")
		pctx, cancel := transport.WithTimeout(ctx, o.ProbeLimit(spec.Host{}), "the probe", target.ProbeSetting)
		n, err := facts.Probe(pctx, local.New("root:"+abs), facts.Options{Reads: resource.Reads(), Root: abs})
		cancel()
		result := facts.HostFacts{Host: a.Root, Facts: n}
		if err != nil {
			result.Error = err.Error()
		}
		r := v.Report(1)
		r.Add(0, result)
		return err != nil, r.Close()
	}
	cfg, diags := a.Spec.loadModelsOnly(s, a.Dir)
	if err := v.Diagnostics(diags, cfg); err != nil {
		return false, err
	}
	hosts, err := selectHosts(cfg, a.Dir, a.Targets, v)
	if err != nil {
		return false, err
	}
	if err := a.Conn.refuseLocal(hosts, "facts would run its probe on the machine gpuform runs on (--root PATH probes a directory here)"); err != nil {
		return false, err
	}
	o, err := a.Conn.targetOptions(s, a.Dir, v.ShowsProbeProgress(), "probing")
	if err != nil {
		return false, err
	}
	// The listing on stdout says each host's error, once per
	// group of hosts; progress only says which hosts failed.
	o.Progress = errorsBelow{o.Progress}
	return reportHosts(ctx, hosts, o, v)
}

// reportHosts probes every host the way every command does and hands each
// result to v's report as soon as the host is done, from the goroutine
// that probed it, keeping none of the facts: `facts` of a fleet holds a
// host's facts no longer than it takes to render them, not every host's
// until the last is probed. Each host's failure is its own, an
// interruption included (the hosts not probed say so).
func reportHosts(ctx context.Context, hosts []target.Host, o target.Options, v factsView) (failed bool, err error) {
	var r factsReport
	var anyFailed atomic.Bool
	_ = target.ProbeEach(ctx, hosts, o, func(n int) { r = v.Report(n) }, func(i int, p target.Probed) {
		res := hostFacts(p)
		if res.Error != "" {
			anyFailed.Store(true)
		}
		r.Add(i, res)
	})
	return anyFailed.Load(), r.Close()
}

// hostFacts is a probe's outcome as `facts` reports it.
func hostFacts(p target.Probed) facts.HostFacts {
	r := facts.HostFacts{Host: p.Host.Host.Name, Facts: p.Facts}
	if p.Host.Node != nil {
		r.Node = p.Host.Node.Name
	}
	if p.Err != nil {
		r.Error = target.ErrorText(p.Err)
	}
	return r
}

// probeHosts probes every host the way every command does and lists
// the results; each host's failure is its own, an interruption included
// (the hosts not probed say so).
func probeHosts(ctx context.Context, hosts []target.Host, o target.Options) []facts.HostFacts {
	probed, _ := target.Probe(ctx, hosts, o)
	out := make([]facts.HostFacts, 0, len(probed))
	for _, p := range probed {
		out = append(out, hostFacts(p))
	}
	return out
}

// factsView renders what gpuform facts found.
type factsView interface {
	operationView
	// Report starts the report of n hosts.
	Report(n int) factsReport
}

// factsReport takes each host's result as the host is done, in any order
// and from any goroutine (i is the host's place among the n, in spec
// order), and Close writes what is left: facts.JSONReport and the text
// report.
type factsReport interface {
	Add(i int, h facts.HostFacts)
	Close() error
}

func newFactsView(t viewType, s Streams) factsView {
	if t == viewJSON {
		return factsJSON{jsonOperation{s}}
	}
	return factsHuman{humanOperation{s}}
}

type factsHuman struct{ humanOperation }

func (v factsHuman) Report(n int) factsReport {
	return textReport{facts.NewTextReport(n), v.s.Out}
}

// textReport writes the text report once every host is in: its table
// and groups need them all.
type textReport struct {
	*facts.TextReport
	w io.Writer
}

func (r textReport) Close() error {
	r.Render(r.w)
	return nil
}

type factsJSON struct{ jsonOperation }

func (v factsJSON) Report(n int) factsReport { return facts.NewJSONReport(v.s.Out, n) }

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
