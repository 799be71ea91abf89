package apply

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gpuform/gpuform/internal/palette"
	"github.com/gpuform/gpuform/provision/transport"
)

// RenderJSON writes the report as `apply -json` prints it: one indented
// document with the shared format_version.
func RenderJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// TextOptions tune the human recap.
type TextOptions struct {
	// Color paints failures and the verdict in gpuform's palette
	// (internal/palette); the CLI sets it only on a terminal without
	// NO_COLOR.
	Color bool
}

// RenderText writes the recap, one row per host as Ansible's PLAY RECAP
// (host | resources added, changed, destroyed | steps | rebooted | failed
// | time | result), then Terraform's verdict in the plan's units
// ("Apply complete! Resources: 6 added, 3 changed, 0 destroyed.") and one
// line that counts hosts by outcome, naming only the outcomes that
// occurred.
func RenderText(w io.Writer, rep *Report, opts TextOptions) {
	pal := palette.New(opts.Color)
	fmt.Fprintln(w)
	fmt.Fprintln(w, pal.Bold("Apply recap:"))
	// The result is the last column, which tabwriter does not pad, so its
	// colour codes shift no column.
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  HOST\tADDED\tCHANGED\tDESTROYED\tSTEPS\tREBOOTED\tFAILED\tTIME\tRESULT")
	for _, h := range rep.Hosts {
		result := transport.HostText(resultText(h))
		switch h.Status {
		case Failed:
			result = pal.Fail(result)
		case Skipped:
			result = pal.Paint(palette.Caution, result)
		case RebootPending:
			result = pal.Paint(palette.Reboot, result)
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", h.Host, h.Resources.Added, h.Resources.Changed, h.Resources.Destroyed,
			stepsText(h), yesNo(h.Status == Rebooted), yesNo(h.Status == Failed), elapsedText(h), result)
	}
	tw.Flush()
	if rep.Stopped != "" {
		fmt.Fprintf(w, "\n%s %s.\n", pal.Fail("Stopped early:"), rep.Stopped)
	}
	sum := rep.Summary()
	res := fmt.Sprintf("Resources: %d added, %d changed, %d destroyed", sum.Resources.Added, sum.Resources.Changed, sum.Resources.Destroyed)
	steps := fmt.Sprintf("%d %s run", sum.Steps, plural(sum.Steps, "step", "steps"))
	if rep.Converged() {
		fmt.Fprintf(w, "\n%s %s (%s).\n", pal.Paint(palette.Success, "Apply complete!"), res, steps)
	} else {
		fmt.Fprintf(w, "\n%s %s (%s) before it stopped.\n", pal.Fail("Apply failed!"), res, steps)
	}
	fmt.Fprintf(w, "Apply finished on %s.\n", outcomeText(rep))
}

// stepsText is the steps that ran of those planned ("12/12"); "-" for a
// host with none planned.
func stepsText(h HostResult) string {
	if h.StepsPlanned == 0 && h.StepsRun == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", h.StepsRun, h.StepsPlanned)
}

// outcomeText counts hosts by outcome: "1 host: 1 rebooted",
// "32 hosts: 30 succeeded, 1 failed, 1 skipped".
func outcomeText(rep *Report) string {
	n := len(rep.Hosts)
	var parts []string
	for _, s := range []Status{Succeeded, Rebooted, RebootPending, Failed, Skipped} {
		if c := rep.Count(s); c > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c, s))
		}
	}
	if n == 0 {
		return "no hosts"
	}
	return fmt.Sprintf("%d %s: %s", n, plural(n, "host", "hosts"), strings.Join(parts, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// elapsedText is the host's time, to the second ("1m02s"); "-" for a host
// apply never started.
func elapsedText(h HostResult) string {
	if h.Elapsed <= 0 {
		return "-"
	}
	return durationText(h.Elapsed)
}

func durationText(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
	if d < time.Hour {
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

// resultText says how the host ended and what is left to do there.
func resultText(h HostResult) string {
	detail := ""
	switch {
	case h.Error != "":
		detail = h.Error
	case h.Status == RebootPending && strings.HasPrefix(h.Slurm, "reboot through Slurm"):
		detail = "applied; " + h.Slurm
	case h.Slurm != "" && h.StepsRun == 0:
		detail = "Slurm: " + h.Slurm
	case h.Status == RebootPending:
		detail = "applied; reboot the host (or set rollout { reboot = \"allow\" }) to finish"
	case h.StepsRun == 0 && h.Status == Succeeded:
		detail = "no changes"
	case h.Slurm != "":
		detail = "Slurm: " + h.Slurm
	}
	if detail == "" {
		return string(h.Status)
	}
	return string(h.Status) + ": " + detail
}

// DefaultWidth is the live line's width when the terminal's is not known.
const DefaultWidth = 80

// ProgressOptions tune a Progress.
type ProgressOptions struct {
	// Live keeps one progress line, rewritten in place, instead of a line
	// per step: the CLI sets it when its output is a terminal and
	// -verbose is off.
	Live bool
	// Hosts is how many hosts apply will walk (the "of N").
	Hosts int
	// Width bounds the live line: the terminal's width, which the CLI
	// reads (Streams.Width); 0 means 80, a terminal's default.
	Width int
	// Color paints a host's failure line red (internal/palette).
	Color bool
	// Now returns the current time (tests pin it); default time.Now.
	Now func() time.Time
}

// Progress shows apply's Events as they come: a line per step, or (Live)
// one line saying how many hosts are done, running and failed and what the
// host that has been running longest is doing. A host's failure is
// always printed on a line of its own, so that it stays on the screen.
// Its methods may be called from several goroutines.
type Progress struct {
	w    io.Writer
	opts ProgressOptions

	mu      sync.Mutex
	running map[string]*hostProgress
	done    int
	failed  int
	shown   bool
}

type hostProgress struct {
	start time.Time
	step  string
}

// NewProgress returns a Progress writing to w.
func NewProgress(w io.Writer, opts ProgressOptions) *Progress {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Width <= 0 {
		opts.Width = DefaultWidth
	}
	opts.Width = max(opts.Width, 20)
	return &Progress{w: w, opts: opts, running: map[string]*hostProgress{}}
}

// Event takes one of apply's Events (Options.Progress).
func (p *Progress) Event(e Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := transport.HostText(e.Message)
	if e.Done {
		delete(p.running, e.Host)
		p.done++
		if e.Status == Failed {
			p.failed++
		}
	} else if h, ok := p.running[e.Host]; ok {
		h.step = msg
	} else {
		p.running[e.Host] = &hostProgress{start: p.opts.Now(), step: msg}
	}
	if e.Done && e.Status == Failed {
		msg = palette.New(p.opts.Color).Fail(msg)
	}
	if !p.opts.Live {
		fmt.Fprintf(p.w, "%s: %s\n", e.Host, msg)
		return
	}
	if e.Done && e.Status == Failed {
		p.clear()
		fmt.Fprintf(p.w, "%s: %s\n", e.Host, msg)
	}
	p.draw()
}

// Finish removes the live line, before the recap is printed.
func (p *Progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
}

func (p *Progress) clear() {
	if p.shown {
		io.WriteString(p.w, "\r\x1b[K")
		p.shown = false
	}
}

// draw rewrites the live line: "Applying: 3/32 hosts done, 4 running,
// 1 failed; slowest gpu007 (2m10s): step 5/12: install cuda-drivers-550".
func (p *Progress) draw() {
	line := fmt.Sprintf("Applying: %d/%d %s done, %d running, %d failed", p.done, p.opts.Hosts, plural(p.opts.Hosts, "host", "hosts"), len(p.running), p.failed)
	var slowest string
	var first time.Time
	for name, h := range p.running {
		if slowest == "" || h.start.Before(first) || h.start.Equal(first) && name < slowest {
			slowest, first = name, h.start
		}
	}
	if slowest != "" {
		line += fmt.Sprintf("; slowest %s (%s): %s", slowest, durationText(p.opts.Now().Sub(first)), p.running[slowest].step)
	}
	// One column short of the width: a line that fills the last column
	// makes many terminals wrap, and the next \r would then rewrite only
	// the wrapped part.
	if r := []rune(line); len(r) > p.opts.Width-1 {
		line = string(r[:p.opts.Width-2]) + "…"
	}
	io.WriteString(p.w, "\r\x1b[K"+line)
	p.shown = true
}
