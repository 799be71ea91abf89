package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gpuform/gpuform/internal/hostrange"
	"github.com/gpuform/gpuform/internal/palette"

	"github.com/gpuform/gpuform/internal/spelling"

	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/transport"
)

// TextOptions tune the human report.
type TextOptions struct {
	// Color enables ANSI colours (a terminal without NO_COLOR).
	Color bool
	// Verbose lists every device; by default the devices of a layer and
	// test that are all ok are folded into one row showing the lowest.
	Verbose bool
}

// WriteText renders r for a person: per host a table of the measurements,
// the scaling curve, and the bottleneck with its reasoning and fix, then
// one summary line.
func WriteText(w io.Writer, r *bench.Report, o TextOptions) error {
	// gpuform's one palette (internal/palette): the bottleneck is the red
	// of verify's FAIL.
	paint := func(r palette.Role, s string) string { return palette.New(o.Color).Paint(r, s) }
	var b strings.Builder
	var c counts
	// A fleet of identical hosts reads as one block under a folded range
	// (gpu[01-04] (4 hosts)), as plan, verify and facts do; the JSON stays
	// one entry per host.
	type block struct {
		host, head, body string
	}
	blocks := make([]block, 0, len(r.Hosts))
	for _, h := range r.Hosts {
		var hb strings.Builder
		if err := writeHost(&hb, h, o, paint, &c); err != nil {
			return err
		}
		head := ""
		if h.Model != "" {
			head = fmt.Sprintf(" (%d × %s)", h.GPUs, h.Model)
		} else if h.GPUs > 0 {
			head = fmt.Sprintf(" (%d GPUs of a model not in the knowledge base)", h.GPUs)
		}
		blocks = append(blocks, block{host: h.Host, head: head, body: hb.String()})
	}
	for i, g := range hostrange.GroupBy(blocks, func(b block) string { return b.head + "\x00" + b.body }) {
		if i > 0 {
			b.WriteString("\n")
		}
		names := make([]string, len(g.Items))
		for k, hb := range g.Items {
			names[k] = hb.host
		}
		b.WriteString(paint(palette.Bold, transport.HostText(hostrange.Title(names))+g.Items[0].head) + "\n")
		b.WriteString(g.Items[0].body)
	}
	writeOutliers(&b, r.Outliers, paint)
	fmt.Fprintf(&b, "\nBench: %d host(s), %d with a bottleneck, %d could not be benched, %d measurement(s) not made.\n", len(r.Hosts), c.bottlenecks, c.failed, c.unmeasured)
	_, err := io.WriteString(w, b.String())
	return err
}

// counts are the fleet's totals for the summary line, one per host
// whatever the grouping.
type counts struct {
	bottlenecks, unmeasured, failed int
}

// writeHost renders one host's block below its title: its table, its
// scaling curve and its verdict, counting into c.
func writeHost(b *strings.Builder, h bench.Host, o TextOptions, paint func(palette.Role, string) string, c *counts) error {
	if h.Error != "" {
		c.failed++
		fmt.Fprintf(b, "  %s %s\n", paint(palette.Fail, "Error:"), transport.HostText(h.Error))
		return nil
	}
	if h.Binding != "" {
		b.WriteString(paint(palette.Dim, fmt.Sprintf("  host_gpu copies bound to a NUMA node with %s\n", h.Binding)))
	}
	b.WriteString("\n")
	if len(h.Layers) > 0 {
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  layer\tdevice\tmeasured\texpected\t%\tverdict")
		for _, row := range rows(h.Layers, o.Verbose) {
			if row.m.Verdict == bench.VerdictNotMeasured {
				c.unmeasured++
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", row.m.Layer, row.device, gbps(row.m.MeasuredGBps), expected(row.m), pct(row.m.Percent), verdict(paint, row.m.Verdict))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, m := range h.Layers {
			if m.Verdict == bench.VerdictNotMeasured {
				fmt.Fprintf(b, "  %s %s: %s\n", paint(palette.Caution, "Not measured:"), m.Layer, transport.HostText(m.Note))
			}
		}
	}
	if h.WorkloadError != "" {
		c.unmeasured++
		fmt.Fprintf(b, "  %s workload: %s\n", paint(palette.Caution, "Not measured:"), transport.HostText(h.WorkloadError))
	}
	if len(h.Scaling) > 0 {
		b.WriteString("\n  Scaling curve:\n")
		stw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(stw, "  GPUs\tnodes\tall_reduce busbw\texpected\tthroughput\tefficiency")
		for _, p := range h.Scaling {
			eff := "-"
			if p.Efficiency != nil {
				eff = fmt.Sprintf("%.2f (%s)", *p.Efficiency, p.EfficiencyOf)
			}
			thr := "-"
			if p.Throughput != nil {
				thr = fmt.Sprintf("%.4g", *p.Throughput)
			}
			fmt.Fprintf(stw, "  %d\t%d\t%s\t%s\t%s\t%s\n", p.GPUs, p.Nodes, gbps(p.BusBWGBps), gbps(p.ExpectedBusBWGBps), thr, eff)
		}
		if err := stw.Flush(); err != nil {
			return err
		}
	}
	b.WriteString("\n")
	if bn := h.Bottleneck; bn != nil {
		c.bottlenecks++
		fmt.Fprintf(b, "  %s %s on %s\n", paint(palette.Fail, "Bottleneck:"), bn.Layer, bn.Device)
		fmt.Fprintf(b, "    %s\n", transport.HostText(bn.Message))
		if bn.Reasoning != "" {
			fmt.Fprintf(b, "    Why: %s\n", bn.Reasoning)
		}
		if bn.Fix != "" {
			fmt.Fprintf(b, "    Fix: %s\n", transport.HostText(bn.Fix))
		}
		for _, f := range bn.Also {
			fmt.Fprintf(b, "  %s %s on %s (%.0f%%)", paint(palette.Caution, "Also below expectation:"), f.Layer, f.Device, f.Percent)
			if f.Fix != "" {
				fmt.Fprintf(b, "\n    Fix: %s", transport.HostText(f.Fix))
			}
			b.WriteString("\n")
		}
	} else if len(h.Layers) == 0 && len(h.Scaling) == 0 {
		b.WriteString("  Nothing to measure: the layers asked for do not apply to this host (storage needs bench { storage } paths).\n")
	} else if n := notMeasured(h); n > 0 {
		fmt.Fprintf(b, "  %s %d measurement(s) could not be made; among the others none is below its expectation.\n", paint(palette.Caution, "No verdict:"), n)
	} else {
		b.WriteString("  " + paint(palette.Pass, "No bottleneck: every layer reaches its expectation.") + "\n")
	}
	return nil
}

type row struct {
	m      bench.Measurement
	device string
}

// rows folds, unless verbose, the measurements of one group (layer and
// test, see groupTest) whose verdicts are all ok (or all contrast) into one
// row showing the lowest of them; groups keep the order they first appear
// in.
func rows(ms []bench.Measurement, verbose bool) []row {
	var out []row
	for _, group := range groups(ms) {
		// A group folds when every device is ok, or every one is a
		// contrast run: the lowest stands for the rest.
		v := group[0].Verdict
		fold := len(group) > 2 && (v == bench.VerdictOK || v == bench.VerdictContrast)
		for _, m := range group {
			fold = fold && m.Verdict == v
		}
		if fold && !verbose {
			low := lowest(group)
			out = append(out, row{m: *low, device: fmt.Sprintf("%s: %d devices, lowest %s", groupTest(low.Test), len(group), low.Device)})
			continue
		}
		for _, m := range group {
			out = append(out, row{m: m, device: m.Device + " " + m.Test})
		}
	}
	return out
}

// groups splits measurements by layer and test kind, in the order each
// group first appears.
func groups(ms []bench.Measurement) [][]bench.Measurement {
	idx := map[string]int{}
	var out [][]bench.Measurement
	for _, m := range ms {
		k := string(m.Layer) + "\x00" + groupTest(m.Test)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], m)
	}
	return out
}

// groupTest is a test without what differs from one device to the next:
// "host_to_device (NUMA node 1, the GPU's)" is "host_to_device (own NUMA
// node)" for every GPU.
func groupTest(t string) string {
	head, rest, ok := strings.Cut(t, " (")
	if !ok {
		return t
	}
	switch {
	case strings.Contains(rest, "not the GPU's"):
		return head + " (other NUMA node)"
	case strings.Contains(rest, "the GPU's"):
		return head + " (own NUMA node)"
	case strings.Contains(rest, "spec's bind"):
		return head + " (the spec's NUMA bind)"
	}
	return t
}

// lowest is the measurement of a group furthest below its expectation,
// nil when none has one.
func lowest(group []bench.Measurement) *bench.Measurement {
	var low *bench.Measurement
	for i := range group {
		if p := group[i].Percent; p != nil && (low == nil || *p < *low.Percent) {
			low = &group[i]
		}
	}
	return low
}

func gbps(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f GB/s", *v)
}

func expected(m bench.Measurement) string {
	if m.ExpectedGBps == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f GB/s %s", *m.ExpectedGBps, m.Status)
}

func pct(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", *v)
}

func verdict(paint func(palette.Role, string) string, v bench.Verdict) string {
	switch v {
	case bench.VerdictOK:
		return paint(palette.Pass, string(v))
	case bench.VerdictBelow:
		return paint(palette.Fail, string(v))
	case bench.VerdictNotMeasured:
		return paint(palette.Caution, string(v))
	}
	return string(v)
}

func notMeasured(h bench.Host) int {
	n := 0
	for _, m := range h.Layers {
		if m.Verdict == bench.VerdictNotMeasured {
			n++
		}
	}
	return n
}

// writeOutliers renders the peer outliers after the hosts: warnings, in
// verify's words, that do not change bench's exit status.
func writeOutliers(b *strings.Builder, outs []bench.Outlier, paint func(palette.Role, string) string) {
	if len(outs) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s%s (more than %.0f%% below the median of the same model; a warning, bench's exit status does not change)\n",
		paint(palette.Warn, "Warning: "), paint(palette.Bold, "Peer outliers"), outs[0].MarginPercent)
	for _, o := range outs {
		who := transport.HostText(o.Host) + " " + transport.HostText(o.Device)
		if o.BusID != "" {
			who += " (" + transport.HostText(spelling.BusID(o.BusID)) + ")"
		}
		fmt.Fprintf(b, "  %s: %s %s %.1f GB/s, %.0f%% below the %s median %.1f GB/s (%d × %s)\n",
			who, o.Layer, o.Metric, o.Value, o.PercentBelow, o.Scope, o.Median, o.Peers, transport.HostText(o.Model))
	}
}
