package report

import (
	"fmt"
	"io"
	"strings"

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

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiDim    = "\x1b[2m"
)

// WriteText renders d for a person: a block per host with one line per
// check (status, id, observed and expected), the reason under each failure,
// and a closing summary line.
func WriteText(w io.Writer, d *Document, opts TextOptions) error {
	p := &printer{w: w, color: opts.Color}
	for i, h := range d.Hosts {
		if i > 0 {
			p.line("")
		}
		title := h.Host
		if h.Source != "" {
			title += p.paint(ansiDim, " ("+h.Source+")")
		}
		p.line(p.paint(ansiBold, "Host ") + title)
		width := 0
		for _, c := range h.Checks {
			width = max(width, len(c.ID))
		}
		passed := 0
		for _, c := range h.Checks {
			if c.Status == verify.StatusPass && !opts.Verbose {
				passed++
				continue
			}
			p.check(c, width)
		}
		if passed > 0 {
			p.line(p.paint(ansiGreen, fmt.Sprintf("  %d checks passed", passed)))
		}
	}
	s := d.Summary
	if len(d.Hosts) > 0 {
		p.line("")
	}
	verdict := p.paint(ansiGreen+ansiBold, "Verify passed")
	if !d.OK() {
		verdict = p.paint(ansiRed+ansiBold, "Verify failed")
	}
	tier := ""
	if d.Tier != "" {
		tier = fmt.Sprintf(" (tier %s)", d.Tier)
	}
	p.line(fmt.Sprintf("%s%s: %d of %d hosts failed; %d checks passed, %d failed, %d errors, %d skipped.",
		verdict, tier, s.HostsFailed, s.Hosts, s.Passed, s.Failed, s.Errors, s.Skipped))
	return p.err
}

type printer struct {
	w     io.Writer
	color bool
	err   error
}

func (p *printer) paint(code, s string) string {
	if !p.color {
		return s
	}
	return code + s + ansiReset
}

func (p *printer) line(s string) {
	if p.err == nil {
		_, p.err = fmt.Fprintln(p.w, s)
	}
}

func (p *printer) check(c verify.CheckResult, width int) {
	var tag string
	switch c.Status {
	case verify.StatusPass:
		tag = p.paint(ansiGreen, "pass ")
	case verify.StatusFail:
		tag = p.paint(ansiRed+ansiBold, "FAIL ")
	case verify.StatusError:
		tag = p.paint(ansiYellow+ansiBold, "ERROR")
	default:
		tag = p.paint(ansiDim, "skip ")
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
	p.line(strings.TrimRight(fmt.Sprintf("  %s  %-*s  %s", tag, width, c.ID, strings.Join(vals, ", ")), " "))
	if c.Message != "" && c.Status != verify.StatusPass {
		p.line(fmt.Sprintf("  %s  %s", strings.Repeat(" ", 5), transport.HostText(c.Message)))
	}
}
