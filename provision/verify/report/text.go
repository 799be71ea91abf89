package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuform/gpuform/internal/palette"

	"github.com/gpuform/gpuform/internal/hostrange"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
)

// TextOptions tune the human report.
type TextOptions struct {
	// Color enables ANSI colours; the CLI sets it only on a terminal
	// without NO_COLOR.
	Color bool
	// Verbose lists passed checks too; by default only failed, errored
	// and skipped checks are listed and passes are counted.
	Verbose bool
}

// WriteText renders d for a person: a block per host with one line per
// check (status, id, observed and expected), the reason under each failure,
// and a closing summary line.
//
// Hosts whose blocks read the same (same NVML source, same failures, same
// number of passes) are printed once under their names folded Slurm style,
// as plan folds identical hosts: 32 unreachable hosts are one block.
func WriteText(w io.Writer, d *Document, opts TextOptions) error {
	p := &printer{w: w, color: opts.Color}
	type block struct {
		host string
		head string
		body string
	}
	var blocks []block
	for _, h := range d.Hosts {
		var b strings.Builder
		hp := &printer{w: &b, color: opts.Color}
		width, tagWidth := 0, len("ERROR")
		for _, c := range h.Checks {
			if c.Status != verify.StatusPass || opts.Verbose {
				width = max(width, len(label(c)))
			}
			if c.Status == verify.StatusNotRun {
				tagWidth = len("not run")
			}
		}
		passed := 0
		for _, c := range h.Checks {
			if c.Status == verify.StatusPass && !opts.Verbose {
				passed++
				continue
			}
			hp.check(c, tagWidth, width)
		}
		if passed > 0 {
			hp.line(hp.paint(palette.Pass, fmt.Sprintf("  %d checks passed", passed)))
		}
		if opts.Verbose {
			// Ports no rail of the spec uses are reported, not judged: a
			// DOWN storage or management port is worth knowing, not a
			// failure of the gate.
			var idle []string
			for _, n := range h.NICs {
				if !n.Judged && !n.Up {
					idle = append(idle, fmt.Sprintf("%s port %d %s (%s)", n.Device, n.Port, orUnknown(n.State), orUnknown(n.PhysState)))
				}
			}
			if len(idle) > 0 {
				hp.line(hp.paint(palette.Dim, "  not judged (no rail of the spec): "+strings.Join(idle, ", ")))
			}
		}
		head := ""
		if h.Source != "" {
			head = p.paint(palette.Dim, " ("+h.Source+")")
		}
		blocks = append(blocks, block{host: h.Host, head: head, body: b.String()})
	}
	for i, g := range hostrange.GroupBy(blocks, func(b block) string { return b.head + "\x00" + b.body }) {
		if i > 0 {
			p.line("")
		}
		names := make([]string, len(g.Items))
		for k, b := range g.Items {
			names[k] = b.host
		}
		p.line(p.paint(palette.Bold, "Host ") + transport.HostText(hostrange.Title(names)) + g.Items[0].head)
		if p.err == nil {
			_, p.err = io.WriteString(w, g.Items[0].body)
		}
	}
	s := d.Summary
	if len(d.Hosts) > 0 {
		p.line("")
	}
	p.writeFleet(d)
	verdict := p.paint(palette.Success, "Verify passed")
	if !d.OK() {
		verdict = p.paint(palette.Fail, "Verify failed")
	}
	tier := ""
	if d.Tier != "" {
		tier = fmt.Sprintf(" (tier %s)", d.Tier)
	}
	notRun := ""
	if s.NotRun > 0 {
		notRun = fmt.Sprintf(", %d not run", s.NotRun)
	}
	p.line(fmt.Sprintf("%s%s: %d of %d hosts failed; %d checks passed, %d failed, %d errors, %d skipped%s.",
		verdict, tier, s.HostsFailed, s.Hosts, s.Passed, s.Failed, s.Errors, s.Skipped, notRun))
	return p.err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

type printer struct {
	w     io.Writer
	color bool
	err   error
}

// paint colours s in gpuform's one palette (internal/palette), the same
// red for FAIL as apply's failures and plan's errors.
func (p *printer) paint(r palette.Role, s string) string {
	return palette.New(p.color).Paint(r, s)
}

func (p *printer) line(s string) {
	if p.err == nil {
		_, p.err = fmt.Fprintln(p.w, s)
	}
}

// check prints one check line; tagWidth is the width of the status tags
// of the host's block (wider only when a check of it was not run, so that
// other reports keep their columns).
func (p *printer) check(c verify.CheckResult, tagWidth, width int) {
	pad := func(s string) string { return fmt.Sprintf("%-*s", tagWidth, s) }
	var tag string
	switch c.Status {
	case verify.StatusPass:
		tag = p.paint(palette.Pass, pad("pass"))
	case verify.StatusFail:
		tag = p.paint(palette.Fail, pad("FAIL"))
	case verify.StatusSkip:
		tag = p.paint(palette.Dim, pad("skip"))
	case verify.StatusNotRun:
		// Upper case where it fails the host, as FAIL and ERROR are.
		if c.Blocks() {
			tag = p.paint(palette.Fail, pad("NOT RUN"))
		} else {
			tag = p.paint(palette.Dim, pad("not run"))
		}
	default:
		tag = p.paint(palette.Warn, pad("ERROR"))
	}
	// Observed values and messages carry what hosts reported (GPU names,
	// nccl-tests and dcgmi output): HostText keeps them from moving the
	// cursor or starting a line of their own.
	var vals []string
	if c.Observed != "" {
		vals = append(vals, transport.HostText(c.Observed))
	}
	if c.Expected != "" && c.Status != verify.StatusPass {
		vals = append(vals, "expected "+transport.HostText(c.Expected))
	}
	p.line(strings.TrimRight(fmt.Sprintf("  %s  %-*s  %s", tag, width, label(c), strings.Join(vals, ", ")), " "))
	if c.Message != "" && c.Status != verify.StatusPass {
		p.line(fmt.Sprintf("  %s  %s", strings.Repeat(" ", tagWidth), transport.HostText(c.Message)))
	}
	if r := c.Remedy; r != nil && c.Status != verify.StatusPass {
		pad := strings.Repeat(" ", tagWidth)
		p.line(fmt.Sprintf("  %s  what it means: %s [%s]", pad, r.Meaning, r.Cause))
		nv := ""
		if r.NVIDIAAction != "" && r.NVIDIAAction != "none given" {
			nv = "NVIDIA: " + r.NVIDIAAction + "; "
		}
		p.line(fmt.Sprintf("  %s  what to do:    %s [%s] (%scatalogue status %s)", pad, r.Do, r.Action, nv, r.Status))
	}
}

// label is a check's id as the text report shows it: a per-GPU check with
// the GPU's PCI bus id, which is what an operator finds the GPU by.
func label(c verify.CheckResult) string {
	if c.GPU != nil && c.GPU.BusID != "" {
		return c.ID + " (" + transport.HostText(c.GPU.BusID) + ")"
	}
	return c.ID
}
