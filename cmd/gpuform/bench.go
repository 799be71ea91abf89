package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/bench/report"
	"github.com/gpuform/gpuform/provision/engine"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

// benchArguments are the arguments of gpuform bench.
type benchArguments struct {
	// Dir is the spec directory, "." when omitted.
	Dir string
	// Spec are -var and -var-file.
	Spec specFlags
	// Conn are the connection flags.
	Conn connectFlags
	// Targets are the -target hosts; none means every host.
	Targets []string
	// Layers are -layers, parsed; none means every layer.
	Layers []bench.Layer
	// Format is -format (text, json); -json sets json.
	Format string
	// OutPath is -out: the report's file, "" for standard output.
	OutPath string
	// PlotPath is -plot: the chart's file, SVG or PNG by its extension,
	// "" for none.
	PlotPath string
	// Budget is -budget: the time limit per host, 0 for the spec's.
	Budget time.Duration
	// Verbose lists every device.
	Verbose bool
	// Engines are -engine and the slurm engine's flags
	// (verify_engine.go).
	Engines engineFlags

	layers []string
	json   bool
}

func (a *benchArguments) register(fs *pflag.FlagSet) {
	a.Spec.register(fs)
	a.Conn.register(fs)
	fs.StringArrayVar(&a.Targets, "target", nil, "only these hosts (repeatable; ranges allowed)")
	fs.StringArrayVar(&a.layers, "layers", nil, "only these layers: hbm, gpu_gpu, host_gpu, network, storage (comma list or repeated)")
	fs.StringVar(&a.Format, "format", "text", "text or json")
	fs.BoolVar(&a.json, "json", false, "print the report as JSON (the same as -format json)")
	fs.StringVar(&a.OutPath, "out", "", "write the report to FILE instead of standard output")
	fs.StringVar(&a.PlotPath, "plot", "", "also draw the chart (each layer as a share of expected, the scaling curve against its expectation) to FILE.svg or FILE.png")
	fs.DurationVar(&a.Budget, "budget", 0, "time limit per host (default: the spec's bench { timeout }, else 20m)")
	fs.BoolVar(&a.Verbose, "verbose", false, "list every device, not only the lowest of a layer whose devices are all ok")
	a.Engines.register(fs)
}

// finish checks -format, -layers and -budget, in the order bench has
// always reported them.
func (a *benchArguments) finish(fs *pflag.FlagSet, args []string) error {
	a.Dir = dirArg(args)
	if err := jsonAliasOf(fs, a.json, &a.Format); err != nil {
		return err
	}
	if a.Format != "text" && a.Format != "json" {
		return fmt.Errorf("-format must be text or json, not %q", a.Format)
	}
	layers, err := bench.ParseLayers(a.layers)
	if err != nil {
		return err
	}
	a.Layers = layers
	if a.Budget < 0 {
		return fmt.Errorf("-budget must be a positive duration, not %s", a.Budget)
	}
	if a.PlotPath != "" {
		if _, err := report.PlotFormat(a.PlotPath); err != nil {
			return fmt.Errorf("-plot %w", err)
		}
	}
	if a.Engines.Engine == engine.Kubernetes {
		return fmt.Errorf("bench -engine kubernetes is not there yet: bench over SSH (-engine ssh) or Slurm (-engine slurm)")
	}
	return a.Engines.finishFor(fs, false, true)
}

// parseBenchArguments parses gpuform bench's command line (after "bench").
func parseBenchArguments(args []string) (*benchArguments, error) {
	a := &benchArguments{}
	return a, parseArguments(args, a.register, maxOneDir, a.finish)
}

func newBenchCommand(s Streams) *cobra.Command {
	a := &benchArguments{}
	cmd := &cobra.Command{
		Use:         "bench [DIR]",
		Annotations: graceful(),
		Short:       "Measure each bandwidth layer and the scaling curve, and name the bottleneck",
		Long: `Bench measures, on every host of the spec in DIR, the layers data crosses
to reach a GPU, and compares each with what the hardware should carry:

  hbm       device memory bandwidth per GPU (nvbandwidth device_local_copy)
  gpu_gpu   peer copies for every GPU pair (nvbandwidth) and single-node
            all_reduce bus bandwidth (nccl-tests)
  host_gpu  host->device and device->host per GPU (nvbandwidth), bound to
            the GPU's own NUMA node and, for contrast, to another one
            (numactl when the node has it, else taskset)
  network   RDMA write bandwidth per NIC (perftest's ib_write_bw between
            neighbouring NICs of the node and, in a node block of two or
            more hosts, between the same rail's NICs of paired hosts)
            against the link rate
  storage   sequential fio read and write on the spec's bench { storage }
            paths, against the floors the spec gives

Expected figures come from the knowledge base (HBM per GPU model, NVLink
per model, PCIe per generation and width, published all_reduce results)
and from sysfs (NIC rates); each row says its source and whether it is a
peak, an achievable figure or the spec's floor.

The scaling curve is all_reduce bus bandwidth at 1, 2, 4 and 8 GPUs and,
with a bench { command, throughput } workload, its throughput at each
count and the efficiency T(n) / (n x T(1)). The bottleneck is the layer and
device furthest below expectation, read the standard way: a single-node
drop points inside the node (NVLink, PCIe, NUMA), a multi-node drop only
at the network.

A layer whose tool is not installed is reported as not measured with the
package to install (bench { tools = ["perftest", "fio"] } makes apply
install it) or, for nccl-tests, where to build it; it is never a pass.

Peer outliers: each GPU's HBM and own-NUMA host copies, and each NIC's RDMA
writes, are compared with the median of the same model in its node and
across the hosts benched; one more than verify { outlier_margin_percent }
(default 10) below is listed by host and bus id as a warning.

Exit status: 0 every layer measured and no bottleneck (peer outliers
included); 2 a bottleneck, a layer not measured, or a host that could not
be benched; 1 bench could not run (invalid spec, bad flag).`,
		Args: maxOneDir,
		RunE: jsonErrors(s, func() bool { return a.Format == "json" && a.OutPath == "" }, func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			if a.Engines.EngineNode != "" {
				// The node side of bench -engine slurm: its frames are
				// the output.
				return runBenchEngineNode(cmd.Context(), s, a)
			}
			v := &benchView{s: s, format: a.Format, out: a.OutPath, plot: a.PlotPath, verbose: a.Verbose, w: s.Out}
			defer v.Close()
			r, err := runBench(cmd.Context(), s, a, v)
			if err != nil {
				return err
			}
			if err := v.Report(r); err != nil {
				return err
			}
			if !r.OK() {
				return exitError{ExitReport}
			}
			return nil
		}),
	}
	a.register(cmd.Flags())
	completeValues(cmd, "format", "text", "json")
	completeValues(cmd, "layers", "hbm", "gpu_gpu", "host_gpu", "network", "storage")
	return cmd
}

// runBench is gpuform bench's work: it loads the spec, picks the hosts and
// measures them, and returns the report for v to render.
func runBench(ctx context.Context, s Streams, a *benchArguments, v *benchView) (*bench.Report, error) {
	cfg, diags := a.Spec.loadPinned(s, a.Dir)
	if err := v.Diagnostics(diags, cfg); err != nil {
		return nil, err
	}
	targets, err := selectHosts(cfg, a.Dir, a.Targets, v)
	if err != nil {
		return nil, err
	}
	if err := a.Conn.refuseLocal(targets, "bench would run its measurements on the machine gpuform runs on"); err != nil {
		return nil, err
	}
	for _, tg := range targets {
		if err := bench.RefuseLocal(tg, a.Conn.allowLocal); err != nil {
			return nil, err
		}
	}
	copts, err := a.Conn.options(s, a.Dir)
	if err != nil {
		return nil, err
	}
	k, err := s.KB()
	if err != nil {
		return nil, err
	}
	o := bench.Options{Target: a.Conn.targetOptionsFor(s, copts, v.ShowsProbeProgress(), "benchmarking"), Layers: a.Layers, Budget: a.Budget, AllowLocal: a.Conn.allowLocal, KB: k}
	o.LaunchNames = func(ctx context.Context, group []target.Host) map[string]string {
		return runner.LaunchNames(ctx, runner.Options{Target: o.Target}, group)
	}
	// Open the outputs before the run: a typo in a path must not
	// cost a bench of several minutes.
	if err := v.Open(); err != nil {
		return nil, err
	}
	if a.Engines.Engine == engine.Slurm {
		return benchEngine(ctx, s, a, cfg, targets, o)
	}
	return bench.Run(ctx, targets, o), nil
}

// benchView renders bench's report as text or JSON, to standard output
// or the -out file, and its chart to -plot.
type benchView struct {
	s       Streams
	format  string
	out     string
	plot    string
	verbose bool
	w       io.Writer
	file    *os.File
}

func (v *benchView) Diagnostics(diags hcl.Diagnostics, cfg *spec.Config) error {
	return reportLoad(v.s, diags, cfg, v.format == "json" && v.out == "")
}

// ShowsProbeProgress: a bench takes minutes per host, so progress goes to
// stderr whenever the report is text on the terminal's stdout.
func (v *benchView) ShowsProbeProgress() bool { return v.format == "text" && v.out == "" }

// Open creates the -out file and checks -plot's directory.
func (v *benchView) Open() error {
	if v.out != "" {
		f, err := os.Create(v.out)
		if err != nil {
			return fmt.Errorf("-out: %w", err)
		}
		v.file, v.w = f, f
	}
	if v.plot != "" {
		if st, err := os.Stat(filepath.Dir(v.plot)); err != nil || !st.IsDir() {
			return fmt.Errorf("-plot: %s is not a directory", filepath.Dir(v.plot))
		}
	}
	return nil
}

// Close closes the -out file.
func (v *benchView) Close() {
	if v.file != nil {
		v.file.Close()
	}
}

// Report writes the report, the chart, and where they went.
func (v *benchView) Report(r *bench.Report) error {
	var err error
	if v.format == "json" {
		err = report.WriteJSON(v.w, r)
	} else {
		err = report.WriteText(v.w, r, report.TextOptions{Color: v.s.Color(v.w) && v.out == "", Verbose: v.verbose})
	}
	if err != nil {
		return err
	}
	if v.plot != "" {
		var buf bytes.Buffer
		write := report.WriteSVG
		if f, _ := report.PlotFormat(v.plot); f == "png" {
			write = report.WritePNG
		}
		if err := write(&buf, r); err != nil {
			return fmt.Errorf("-plot: %w", err)
		}
		if err := os.WriteFile(v.plot, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("-plot: %w", err)
		}
	}
	if v.out != "" || v.plot != "" {
		msg := "Bench:"
		if v.out != "" {
			msg += " report written to " + v.out + "."
		}
		if v.plot != "" {
			msg += " chart written to " + v.plot + "."
		}
		out := v.s.Out
		if v.format == "json" && v.out == "" {
			out = v.s.Err
		}
		fmt.Fprintln(out, msg)
	}
	return nil
}
