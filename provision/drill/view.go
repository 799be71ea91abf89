package drill

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpuform/gpuform/internal/jsonformat"
)

// document is the JSON form of a report, versioned as every gpuform
// document is.
type document struct {
	FormatVersion string `json:"format_version"`
	OK            bool   `json:"ok"`
	*Report
}

// WriteJSON writes the report as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(document{FormatVersion: jsonformat.Version, OK: r.OK(), Report: r})
}

// WriteHuman writes the report as a table for a runbook, then each
// fault's action in words, then the summary line.
func (r *Report) WriteHuman(w io.Writer) error {
	var b strings.Builder
	if len(r.Faults) == 0 {
		r.writeCheckpoints(&b)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "Drill: %d faults injected into simulated %s nodes\n", len(r.Faults), r.Base)
	if len(r.Disabled) > 0 {
		fmt.Fprintf(&b, "Checks not counted (-disable-check): %s\n", strings.Join(r.Disabled, ", "))
	}
	if len(r.Baseline) > 0 {
		fmt.Fprintf(&b, "Checks failing on the healthy node too, not counted: %s\n", strings.Join(r.Baseline, ", "))
	}
	if r.AlertsBy != "" {
		fmt.Fprintf(&b, "Alerts (gpuform alerts' rules): %s\n", r.AlertsBy)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  \tFAULT\tCAUGHT BY\tALERT\tREMEDY\tHEALTH MODE\tTIME TO DETECT")
	for _, f := range r.Faults {
		mark, check, ttd := "✓", f.Check, round(f.TimeToDetect)
		switch {
		case f.Error != "":
			mark, check, ttd = "!", "error", "-"
		case !f.Detected:
			mark, check, ttd = "✗", "NOT CAUGHT", "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", mark, f.Name, check, dash(f.Alert), dash(f.Remedy), f.Action, ttd)
	}
	tw.Flush()
	b.WriteString("\n")
	failed := 0
	for _, f := range r.Faults {
		fmt.Fprintf(&b, "%s: %s\n", f.Name, f.Summary)
		fmt.Fprintf(&b, "    injected on: %s\n", strings.Join(f.Layers, ", "))
		if len(f.Group) > 0 {
			fmt.Fprintf(&b, "    node group (verify -tier fleet, the faulty node last): %s\n", strings.Join(f.Group, ", "))
		}
		if len(f.GroupFailures) > 0 {
			fmt.Fprintf(&b, "    failing on a healthy peer too, not counted: %s\n", strings.Join(f.GroupFailures, ", "))
		}
		switch {
		case f.Error != "":
			failed++
			fmt.Fprintf(&b, "    error: %s\n", f.Error)
		case !f.Detected:
			failed++
			b.WriteString("    nothing caught it\n")
		default:
			if len(f.Checks) > 1 {
				fmt.Fprintf(&b, "    also failed: %s\n", strings.Join(f.Checks[1:], ", "))
			}
			if len(f.Alerts) > 1 {
				fmt.Fprintf(&b, "    alerts: %s\n", strings.Join(f.Alerts, ", "))
			}
			if f.RemedyDo != "" {
				fmt.Fprintf(&b, "    remedy: %s\n", f.RemedyDo)
			}
			if f.DrainReason != "" {
				fmt.Fprintf(&b, "    drain reason: %s\n", f.DrainReason)
			}
		}
	}
	b.WriteString("\n")
	if len(r.Checkpoints) > 0 {
		r.writeCheckpoints(&b)
	} else {
		r.writeNotRun(&b)
	}
	if failed == 0 && len(r.Faults) > 0 {
		fmt.Fprintf(&b, "Drill passed: %d of %d faults caught.\n", len(r.Faults), len(r.Faults))
	} else {
		fmt.Fprintf(&b, "Drill failed: %d of %d faults not caught.\n", failed, len(r.Faults))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func round(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeCheckpoints writes the checkpoint-restore drill's table, each
// host's verdict in words, and its summary line.
func (r *Report) writeCheckpoints(b *strings.Builder) {
	fmt.Fprintf(b, "Checkpoint restore: the spec's workload killed (SIGKILL) and resumed on %s\n\n", hosts(len(r.Checkpoints)))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  \tNODE\tHOST\tKILLED AFTER\tRESUMED FROM\tTHROUGHPUT BEFORE\tAFTER\tLOSS")
	passed := 0
	for _, c := range r.Checkpoints {
		mark, step, after, loss := "✓", fmt.Sprintf("step %d", c.ResumedStep), fmt.Sprintf("%g", c.ThroughputAfter), fmt.Sprintf("%.1f%%", 100*c.ThroughputLoss)
		switch {
		case c.Error != "":
			mark = "!"
		case !c.Passed:
			mark = "✗"
		default:
			passed++
		}
		if !c.Detected {
			step = "NOT RESUMED"
		}
		if c.ThroughputAfter == 0 {
			after, loss = "-", "-"
		}
		before := "-"
		if c.ThroughputBefore > 0 {
			before = fmt.Sprintf("%g", c.ThroughputBefore)
		}
		killed := "-"
		if c.KilledAfter > 0 {
			killed = round(c.KilledAfter)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", mark, c.Node, c.Host, killed, step, before, after, loss)
	}
	tw.Flush()
	b.WriteString("\n")
	for _, c := range r.Checkpoints {
		switch {
		case c.Error != "":
			fmt.Fprintf(b, "%s: error: %s\n", c.Host, c.Error)
		case !c.Passed:
			fmt.Fprintf(b, "%s: %s\n", c.Host, c.Why)
		default:
			fmt.Fprintf(b, "%s: resumed from step %d, throughput within %.0f%% of before the kill\n", c.Host, c.ResumedStep, 100*c.MaxThroughputLoss)
		}
	}
	b.WriteString("\n")
	r.writeNotRun(b)
	if passed == len(r.Checkpoints) && passed > 0 {
		fmt.Fprintf(b, "Checkpoint restore passed: %d of %s resumed.\n", passed, hosts(len(r.Checkpoints)))
	} else {
		fmt.Fprintf(b, "Checkpoint restore failed: %d of %s did not resume as the spec says.\n", len(r.Checkpoints)-passed, hosts(len(r.Checkpoints)))
	}
}

// writeNotRun names the node blocks the checkpoint drill left out.
func (r *Report) writeNotRun(b *strings.Builder) {
	for _, n := range r.CheckpointsNotRun {
		fmt.Fprintf(b, "Checkpoint restore not run on %s\n", n)
	}
	if len(r.CheckpointsNotRun) > 0 {
		b.WriteString("\n")
	}
}

func hosts(n int) string {
	if n == 1 {
		return "1 host"
	}
	return fmt.Sprintf("%d hosts", n)
}
