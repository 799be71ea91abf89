package plan

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// RenderOptions tune the human plan.
type RenderOptions struct {
	// Color adds ANSI colours (the CLI sets it only on a terminal and when
	// NO_COLOR is unset).
	Color bool
}

type painter struct{ on bool }

func (p painter) paint(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p painter) action(a resource.Action, s string) string {
	switch a {
	case resource.Create:
		return p.paint("32", s)
	case resource.Update:
		return p.paint("33", s)
	case resource.Delete:
		return p.paint("31", s)
	}
	return s
}

func (p painter) bold(s string) string { return p.paint("1", s) }

// RenderText writes the plan the way Terraform writes one: a legend of the
// symbols in use, then per group of hosts with identical plans each
// resource that changes with its attributes before -> after, a summary line
// per group, and a fleet summary.
func RenderText(w io.Writer, p *Plan, opts RenderOptions) error {
	pt := painter{opts.Color}
	var b strings.Builder
	used := map[resource.Action]bool{}
	for _, h := range p.Hosts {
		for _, rc := range h.ResourceChanges {
			used[rc.Action] = true
		}
	}
	if used[resource.Create] || used[resource.Update] || used[resource.Delete] {
		b.WriteString("gpuform used the facts of each host to make this plan. Resource actions are\nindicated with the following symbols:\n")
		for _, a := range []resource.Action{resource.Create, resource.Update, resource.Delete} {
			if used[a] {
				fmt.Fprintf(&b, "%s %s\n", pt.action(a, a.Symbol()), legend(a))
			}
		}
		b.WriteString("\n")
	}
	groups := p.Groups()
	for _, g := range groups {
		renderGroup(&b, g, pt)
	}
	renderSlurm(&b, p, pt)
	renderFleet(&b, p, groups, pt)
	_, err := io.WriteString(w, b.String())
	return err
}

func legend(a resource.Action) string {
	switch a {
	case resource.Create:
		return "create"
	case resource.Update:
		return "update in-place"
	case resource.Delete:
		return "destroy"
	}
	return ""
}

func verb(a resource.Action) string {
	switch a {
	case resource.Create:
		return "will be created"
	case resource.Update:
		return "will be updated in-place"
	case resource.Delete:
		return "will be destroyed"
	}
	return "is unchanged"
}

func renderGroup(b *strings.Builder, g Group, pt painter) {
	h := g.Hosts[0]
	names := FoldHosts(g.Names())
	if len(g.Hosts) == 1 {
		fmt.Fprintf(b, "%s (node %q):\n", pt.bold("Host "+names), h.Node)
	} else {
		fmt.Fprintf(b, "%s (node %q, %d hosts with identical plans):\n", pt.bold("Hosts "+names), h.Node, len(g.Hosts))
	}
	if h.Error != "" {
		fmt.Fprintf(b, "\n  %s %s\n\n", pt.paint("31", "Error:"), h.Error)
		return
	}
	for _, w := range h.Warnings {
		fmt.Fprintf(b, "\n  %s %s\n", pt.paint("33", "Warning:"), w)
	}
	for _, rc := range h.ResourceChanges {
		a := rc.Action
		if a == resource.NoOp {
			continue
		}
		note := ""
		if rc.RebootRequired {
			note = ", " + pt.paint("35", "reboot required")
		}
		if len(rc.Restarts) > 0 {
			note += ", restarts " + strings.Join(rc.Restarts, ", ")
		}
		if len(rc.Downgrades) > 0 {
			note += ", " + pt.paint("33", "downgrades "+strings.Join(rc.Downgrades, ", "))
		}
		fmt.Fprintf(b, "\n  # %s %s%s\n", pt.bold(rc.Resource), verb(a), note)
		fmt.Fprintf(b, "%s %s {\n", pt.action(a, a.Symbol()), rc.Resource)
		renderAttrs(b, rc, pt)
		b.WriteString("    }\n")
	}
	var pending []string
	for _, rc := range h.ResourceChanges {
		if rc.RebootPending {
			if rc.PendingReason != "" {
				// Say what runs now and what runs after the reboot, so
				// that a failed version check is not read as a failed
				// install.
				fmt.Fprintf(b, "\n  # %s: %s; reboot pending\n", rc.Resource, rc.PendingReason)
				continue
			}
			pending = append(pending, rc.Resource)
		}
	}
	if len(pending) > 0 {
		fmt.Fprintf(b, "\n  # %s configured, waiting for a reboot to take effect\n", strings.Join(pending, ", "))
	}
	b.WriteString("\n  ")
	if h.HasChanges() {
		fmt.Fprintf(b, "Plan: %d to add, %d to change, %d to destroy.", h.Summary.Add, h.Summary.Change, h.Summary.Destroy)
	} else {
		b.WriteString(pt.paint("32", "No changes."))
	}
	if h.RebootRequired {
		b.WriteString(" " + pt.paint("35", "Reboot required."))
	} else if h.RebootPending {
		b.WriteString(" " + pt.paint("35", "Reboot pending."))
	}
	b.WriteString("\n\n")
}

// renderAttrs writes changed attributes as "~ key = before -> after", added
// ones with "+", removed ones with "-", and counts the unchanged ones. Under
// a resource that is created every line is "+", with the live value it
// replaces as a trailing comment.
func renderAttrs(b *strings.Builder, rc ResourceChange, pt painter) {
	keys := map[string]bool{}
	for k := range rc.Before {
		keys[k] = true
	}
	for k := range rc.After {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	width := 0
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	unchanged := 0
	type line struct {
		a    resource.Action
		k, v string
	}
	var lines []line
	for _, k := range sorted {
		bv, inB := rc.Before[k]
		av, inA := rc.After[k]
		// A hidden value reads the same before and after; whether it
		// changes is kept aside.
		hiddenChange := rc.sensitiveChanged[k]
		switch {
		case inB && inA && bv.Text == av.Text && !hiddenChange:
			unchanged++
			continue
		case inB && inA && rc.Action == resource.Create:
			// A "+" block holds only "+" lines, as in Terraform; the
			// live value the new file replaces is still worth saying.
			v := quoteValue(av)
			if bv.Text != "" {
				v += " # now " + quoteValue(bv)
			}
			lines = append(lines, line{resource.Create, k, v})
		case inB && inA:
			if bv.Sensitive && av.Sensitive {
				// As Terraform: "~ key = (sensitive value)".
				lines = append(lines, line{resource.Update, k, spec.Redacted})
				break
			}
			lines = append(lines, line{resource.Update, k, quoteValue(bv) + " -> " + quoteValue(av)})
		case inA:
			lines = append(lines, line{resource.Create, k, quoteValue(av)})
		default:
			lines = append(lines, line{resource.Delete, k, quoteValue(bv) + " -> null"})
		}
		if len(k) > width {
			width = len(k)
		}
	}
	for _, l := range lines {
		fmt.Fprintf(b, "    %s %-*s = %s\n", pt.action(l.a, l.a.Symbol()), width, l.k, l.v)
	}
	if unchanged > 0 {
		s := "s"
		if unchanged == 1 {
			s = ""
		}
		fmt.Fprintf(b, "        # (%d unchanged attribute%s hidden)\n", unchanged, s)
	}
}

// quoteValue quotes an attribute value, or writes spec.Redacted bare for a
// hidden one, as Terraform does. Booleans and numbers are quoted too: the
// text plan shows what the resource compares, and its goldens predate the
// typed JSON.
func quoteValue(v Value) string {
	if v.Sensitive {
		return spec.Redacted
	}
	return strconv.Quote(v.Text)
}

func renderFleet(b *strings.Builder, p *Plan, groups []Group, pt painter) {
	changed, clean, failed := 0, 0, 0
	reboot := 0
	for _, h := range p.Hosts {
		switch {
		case h.Error != "":
			failed++
		case h.HasChanges():
			changed++
		default:
			clean++
		}
		if h.RebootRequired {
			reboot++
		}
	}
	if len(p.Hosts) == 0 {
		b.WriteString("No hosts to plan: the spec's nodes have no hosts (or -target matched none).\n")
		return
	}
	if !p.HasChanges() && failed == 0 {
		fmt.Fprintf(b, "%s Every host matches the spec (%d %s)", pt.paint("1;32", "No changes."), len(p.Hosts), plural(len(p.Hosts), "host", "hosts"))
		pending := 0
		for _, h := range p.Hosts {
			if h.RebootPending {
				pending++
			}
		}
		if pending > 0 {
			fmt.Fprintf(b, "; %d %s for a reboot to finish", pending, plural(pending, "waits", "wait"))
		}
		b.WriteString(".\n")
		return
	}
	fmt.Fprintf(b, "%s %d %s in %d %s: %d to change, %d unchanged, %d failed to plan",
		pt.bold("Fleet:"), len(p.Hosts), plural(len(p.Hosts), "host", "hosts"), len(groups), plural(len(groups), "group", "groups"), changed, clean, failed)
	if reboot > 0 {
		fmt.Fprintf(b, ", %d need a reboot", reboot)
	}
	b.WriteString(".\n")
	fmt.Fprintf(b, "%s %d to add, %d to change, %d to destroy.\n", pt.bold("Plan:"), p.Summary.Add, p.Summary.Change, p.Summary.Destroy)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// SlurmHosts lists the hosts whose Slurm action is a, in plan order.
func SlurmHosts(p *Plan, a SlurmAction) []string {
	var out []string
	for _, h := range p.Hosts {
		if h.Slurm != nil && h.Slurm.Action == a {
			out = append(out, h.Host)
		}
	}
	return out
}

// renderSlurm says, for hosts drained through Slurm, where each stands
// and what apply will do there.
func renderSlurm(b *strings.Builder, p *Plan, pt painter) {
	var rows []string
	for _, h := range p.Hosts {
		sp := h.Slurm
		if sp == nil {
			continue
		}
		var what string
		switch {
		case sp.Error != "":
			what = "state unknown: " + sp.Error
		case sp.Action == SlurmDrain:
			what = "drained before its changes, resumed when converged"
		case sp.Action == SlurmSkipForeign:
			what = fmt.Sprintf("left alone: out of service for someone else (Reason=%q); rollout { foreign_drain = \"change\" } changes it anyway", sp.Reason)
		case sp.Action == SlurmChangeForeign:
			what = fmt.Sprintf("changed, and left out of service with its reason (Reason=%q)", sp.Reason)
		case sp.Action == SlurmResumeStale:
			what = fmt.Sprintf("drained by gpuform (Reason=%q) with nothing left to do: apply resumes it", sp.Reason)
		default:
			continue
		}
		state := sp.State
		if state == "" {
			state = "?"
		}
		rows = append(rows, fmt.Sprintf("  %s (Slurm node %s, State=%s): %s\n", h.Host, sp.Node, state, what))
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString(pt.bold("Slurm:") + "\n")
	for _, r := range rows {
		b.WriteString(r)
	}
	b.WriteString("\n")
}
