package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/bench/report"
)

type benchFlags struct {
	targets []string
	layers  []string
	format  string
	out     string
	plot    string
	budget  time.Duration
	verbose bool
	asJSON  bool
}

func newBenchCommand(s Streams) *cobra.Command {
	var flags specFlags
	var conn connectFlags
	var bf benchFlags
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
		RunE: jsonErrors(s, func() bool { return bf.format == "json" && bf.out == "" }, func(cmd *cobra.Command, args []string) error {
			dir := dirArg(args)
			if err := jsonAlias(cmd, bf.asJSON, &bf.format); err != nil {
				return err
			}
			if bf.format != "text" && bf.format != "json" {
				return fmt.Errorf("-format must be text or json, not %q", bf.format)
			}
			layers, err := bench.ParseLayers(bf.layers)
			if err != nil {
				return err
			}
			if bf.budget < 0 {
				return fmt.Errorf("-budget must be a positive duration, not %s", bf.budget)
			}
			cfg, diags := flags.loadPinned(s, dir)
			if err := reportLoad(s, diags, cfg, bf.format == "json" && bf.out == ""); err != nil {
				return err
			}
			targets, err := selectHosts(s, cfg, dir, bf.targets, bf.format == "json" && bf.out == "")
			if err != nil {
				return err
			}
			if err := conn.refuseLocal(targets, "bench would run its measurements on the machine gpuform runs on"); err != nil {
				return err
			}
			for _, tg := range targets {
				if err := bench.RefuseLocal(tg, conn.allowLocal); err != nil {
					return err
				}
			}
			copts, err := conn.options(s, dir)
			if err != nil {
				return err
			}
			// A bench takes minutes per host: progress goes to stderr
			// whenever the report is text on the terminal's stdout.
			show := bf.format == "text" && bf.out == ""
			k, err := s.KB()
			if err != nil {
				return err
			}
			o := bench.Options{Target: conn.targetOptionsFor(s, copts, show, "benchmarking"), Layers: layers, Budget: bf.budget, AllowLocal: conn.allowLocal, KB: k}
			// Open the outputs before the run: a typo in a path must not
			// cost a bench of several minutes.
			w := s.Out
			if bf.out != "" {
				f, err := os.Create(bf.out)
				if err != nil {
					return fmt.Errorf("-out: %w", err)
				}
				defer f.Close()
				w = f
			}
			if bf.plot != "" {
				if st, err := os.Stat(filepath.Dir(bf.plot)); err != nil || !st.IsDir() {
					return fmt.Errorf("-plot: %s is not a directory", filepath.Dir(bf.plot))
				}
			}
			r := bench.Run(cmd.Context(), targets, o)
			if bf.format == "json" {
				err = report.WriteJSON(w, r)
			} else {
				err = report.WriteText(w, r, report.TextOptions{Color: s.Color(w) && bf.out == "", Verbose: bf.verbose})
			}
			if err != nil {
				return err
			}
			if bf.plot != "" {
				var buf bytes.Buffer
				if err := report.WriteSVG(&buf, r); err != nil {
					return fmt.Errorf("-plot: %w", err)
				}
				if err := os.WriteFile(bf.plot, buf.Bytes(), 0o644); err != nil {
					return fmt.Errorf("-plot: %w", err)
				}
			}
			if bf.out != "" || bf.plot != "" {
				msg := "Bench:"
				if bf.out != "" {
					msg += " report written to " + bf.out + "."
				}
				if bf.plot != "" {
					msg += " chart written to " + bf.plot + "."
				}
				out := s.Out
				if bf.format == "json" && bf.out == "" {
					out = s.Err
				}
				fmt.Fprintln(out, msg)
			}
			if !r.OK() {
				return exitError{ExitReport}
			}
			return nil
		}),
	}
	flags.register(cmd.Flags())
	conn.register(cmd.Flags())
	cmd.Flags().StringArrayVar(&bf.targets, "target", nil, "only these hosts (repeatable; ranges allowed)")
	cmd.Flags().StringArrayVar(&bf.layers, "layers", nil, "only these layers: hbm, gpu_gpu, host_gpu, network, storage (comma list or repeated)")
	cmd.Flags().StringVar(&bf.format, "format", "text", "text or json")
	cmd.Flags().BoolVar(&bf.asJSON, "json", false, "print the report as JSON (the same as -format json)")
	completeValues(cmd, "format", "text", "json")
	completeValues(cmd, "layers", "hbm", "gpu_gpu", "host_gpu", "network", "storage")
	cmd.Flags().StringVar(&bf.out, "out", "", "write the report to FILE instead of standard output")
	cmd.Flags().StringVar(&bf.plot, "plot", "", "also draw the chart (measured vs expected per layer, scaling vs ideal) to FILE.svg")
	cmd.Flags().DurationVar(&bf.budget, "budget", 0, "time limit per host (default: the spec's bench { timeout }, else 20m)")
	cmd.Flags().BoolVar(&bf.verbose, "verbose", false, "list every device, not only the lowest of a layer whose devices are all ok")
	return cmd
}
