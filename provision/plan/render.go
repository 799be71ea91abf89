package plan

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/palette"
	"github.com/gpuform/gpuform/internal/spelling"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// RenderOptions tune the human plan.
type RenderOptions struct {
	// Color adds ANSI colours (the CLI sets it only on a terminal and when
	// NO_COLOR is unset).
	Color bool
}

// painter colours the plan in gpuform's one palette (internal/palette).
type painter struct{ palette.Palette }

func (p painter) paint(r palette.Role, s string) string { return p.Paint(r, s) }

func (p painter) action(a resource.Action, s string) string {
	switch a {
	case resource.Create:
		return p.paint(palette.Pass, s)
	case resource.Update:
		return p.paint(palette.Change, s)
	case resource.Delete:
		return p.paint(palette.Destroy, s)
	}
	return s
}

func (p painter) bold(s string) string { return p.paint(palette.Bold, s) }

// RenderText writes the plan the way Terraform writes one: a legend of the
// symbols in use, then per group of hosts with identical plans each
// resource that changes with its attributes before -> after, a summary line
// per group, and a fleet summary.
func RenderText(w io.Writer, p *Plan, opts RenderOptions) error {
	pt := painter{palette.New(opts.Color)}
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
		fmt.Fprintf(b, "\n  %s %s\n\n", pt.paint(palette.Fail, "Error:"), h.Error)
		return
	}
	for _, w := range h.Warnings {
		fmt.Fprintf(b, "\n  %s %s\n", pt.paint(palette.Warn, "Warning:"), w)
	}
	renderImages(b, h, pt)
	for _, rc := range h.ResourceChanges {
		a := rc.Action
		if a == resource.NoOp {
			continue
		}
		note := ""
		if rc.RebootRequired {
			note = ", " + pt.paint(palette.Reboot, "reboot required")
		}
		if len(rc.Restarts) > 0 {
			note += ", restarts " + strings.Join(rc.Restarts, ", ")
		}
		if len(rc.Downgrades) > 0 {
			note += ", " + pt.paint(palette.Change, "downgrades "+strings.Join(rc.Downgrades, ", "))
		}
		where := ""
		if rc.Path != "" {
			// Which file the attributes below are written to.
			where = " (" + rc.Path + ")"
		}
		fmt.Fprintf(b, "\n  # %s%s %s%s\n", pt.bold(rc.Resource), where, verb(a), note)
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
	for _, v := range h.VerifyNotes {
		fmt.Fprintf(b, "\n  # verify: %s\n", v)
	}
	b.WriteString("\n  ")
	if h.HasChanges() {
		fmt.Fprintf(b, "Plan: %d to add, %d to change, %d to destroy", h.Summary.Add, h.Summary.Change, h.Summary.Destroy)
		if len(g.Hosts) > 1 {
			// The fleet total follows; this line is one host's share.
			fmt.Fprintf(b, " on each of the %d hosts", len(g.Hosts))
		}
		b.WriteString(".")
	} else {
		b.WriteString(pt.paint(palette.Pass, "No changes."))
	}
	if h.RebootRequired {
		b.WriteString(" " + pt.paint(palette.Reboot, "Reboot required."))
	} else if h.RebootPending {
		b.WriteString(" " + pt.paint(palette.Reboot, "Reboot pending."))
	}
	b.WriteString("\n\n")
}

// renderAttrs writes changed attributes as "~ key = before -> after", added
// ones with "+", removed ones with "-", and counts the unchanged ones. A
// resource that is created shows every attribute it will have, all "+":
// a block of hidden attributes would say nothing of what is created.
// (A created file that changes a value the host has is planned as an
// update, see changesLiveValue.)
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
	show := func(k string, v Value) string { return quoteValue(displayValue(rc.Resource, k, v)) }
	for _, k := range sorted {
		bv, inB := rc.Before[k]
		av, inA := rc.After[k]
		// A hidden value reads the same before and after; whether it
		// changes is kept aside.
		hiddenChange := rc.sensitiveChanged[k]
		switch {
		case rc.Action == resource.Create:
			if !inA {
				continue
			}
			lines = append(lines, line{resource.Create, k, show(k, av)})
		case inB && inA && bv.Text == av.Text && !hiddenChange:
			unchanged++
			continue
		case inB && inA:
			if bv.Sensitive && av.Sensitive {
				// As Terraform: "~ key = (sensitive value)".
				lines = append(lines, line{resource.Update, k, spec.Redacted})
				break
			}
			lines = append(lines, line{resource.Update, k, show(k, bv) + " -> " + show(k, av)})
		case inA:
			lines = append(lines, line{resource.Create, k, show(k, av)})
		default:
			lines = append(lines, line{resource.Delete, k, show(k, bv) + " -> null"})
		}
		if len(k) > width {
			width = len(k)
		}
	}
	for _, l := range lines {
		if l.k == "version" && l.a != resource.Delete {
			// The release a floating version resolved to says where it
			// came from; one that could not be resolved says so.
			switch {
			case rc.VersionFrom != "":
				l.v += " (from " + strconv.Quote(rc.VersionFrom) + ")"
			case rc.Unresolved != "":
				l.v += " (release known after apply)"
			}
		}
		fmt.Fprintf(b, "    %s %-*s = %s\n", pt.action(l.a, l.a.Symbol()), width, l.k, l.v)
	}
	if rc.Unresolved != "" {
		fmt.Fprintf(b, "        # version: %s\n", rc.Unresolved)
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

// sizeUnit says whether attr of res is a size and the unit the
// resource's own text counts it in (pam_limits counts KiB, daemon.json
// bytes, or 0 for Docker's suffixed "16G"). The text plan writes every size
// in binary units ("64MiB", "16GiB", "unlimited"), as shm's mounted_size
// reads, so that one plan never shows the same limit as 65536 in one place
// and 67108864 in another.
func sizeUnit(res, attr string) (uint64, bool) {
	switch res + " " + attr {
	case resource.Limits + " memlock", resource.Limits + " stack":
		return 1 << 10, true
	case resource.DockerDaemon + " default-ulimits.memlock", resource.DockerDaemon + " default-ulimits.stack":
		return 1, true
	case resource.DockerDaemon + " default-shm-size":
		return 0, true
	}
	return 0, false
}

// DisplayValue is v of attr of resource res as human output shows it
// (plan, and verify's drift check): sizes in the spec's form, anything
// else as the resource wrote it.
func DisplayValue(res, attr string, v Value) Value { return displayValue(res, attr, v) }

// displayValue is v as the text plan shows it: sizes in binary units (see
// sizeUnits), anything else as the resource wrote it.
func displayValue(res, attr string, v Value) Value {
	unit, ok := sizeUnit(res, attr)
	if !ok || v.Sensitive {
		return v
	}
	// Docker writes "soft/hard" when the two differ.
	parts := strings.Split(v.Text, "/")
	for i, part := range parts {
		t, ok := sizeDisplay(part, unit)
		if !ok {
			return v
		}
		parts[i] = t
	}
	v.Text = strings.Join(parts, "/")
	return v
}

// sizeDisplay converts one size written in unit (0: Docker's suffixed
// form, "16G") to the spec's form; ok is false for text it does not know.
func sizeDisplay(s string, unit uint64) (string, bool) { return spelling.Size(s, unit) }

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
		fmt.Fprintf(b, "%s Every host matches the spec (%d %s)", pt.paint(palette.Success, "No changes."), len(p.Hosts), plural(len(p.Hosts), "host", "hosts"))
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
	if len(p.Hosts) == 1 {
		// The host's own "Plan:" line (or its error) is the whole plan;
		// a fleet total would repeat it.
		return
	}
	fmt.Fprintf(b, "%s %d %s in %d %s: %d to change, %d unchanged, %d failed to plan",
		pt.bold("Fleet:"), len(p.Hosts), plural(len(p.Hosts), "host", "hosts"), len(groups), plural(len(groups), "group", "groups"), changed, clean, failed)
	if reboot > 0 {
		fmt.Fprintf(b, ", %d need a reboot", reboot)
	}
	b.WriteString(".\n")
	if failed == len(p.Hosts) {
		// Nothing was planned: "0 to add" would read as "nothing to do".
		fmt.Fprintf(b, "%s no host could be planned; see the errors above.\n", pt.paint(palette.Fail, "No plan:"))
		return
	}
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

// renderImages writes the knowledge base's verdicts on the node's images,
// as lint's container_image_driver and verify word them: an error is an
// image that cannot run on the driver the host will have.
func renderImages(b *strings.Builder, h *HostPlan, pt painter) {
	for _, v := range h.Images {
		label := pt.paint(palette.Warn, "Warning:")
		if v.Severity == ImageError {
			label = pt.paint(palette.Fail, "Error:")
		}
		gpu := v.GPUClass
		if v.GPU != "" {
			gpu = v.GPU + ", " + v.GPUClass
		}
		fmt.Fprintf(b, "\n  %s %s [%s]\n", label, v.Message, gpu)
		if v.Source != "" {
			fmt.Fprintf(b, "    source: %s\n", v.Source)
		}
	}
}
