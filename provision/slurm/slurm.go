// Package slurm reads and changes a node's state in Slurm with scontrol
// (and squeue for its jobs), over any transport: on the node itself, on a
// Slurm client host (controller or login node) that addresses the node by
// name, or on this machine for the health-check mode. It decides nothing
// about when to drain; it tells gpuform's drains from everyone else's.
package slurm

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"

	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
)

// ReasonPrefix starts every drain reason gpuform sets. gpuform resumes only
// nodes whose reason starts with it; every other drain is an admin's (or
// another tool's, such as NHC) and is left alone.
const ReasonPrefix = "gpuform:"

// maxReason bounds a reason gpuform writes: sinfo -R and scontrol show it
// on one line, and a whole error message would drown the admin's view.
const maxReason = 200

// Reason makes a reason gpuform sets: "gpuform: " + text, on one line and
// shortened to fit Slurm's reason column.
func Reason(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	r := ReasonPrefix + " " + text
	if len(r) > maxReason {
		r = r[:maxReason-3] + "..."
	}
	return r
}

// Node is one node as Slurm shows it.
type Node struct {
	// Name is the Slurm node name.
	Name string
	// State is scontrol's State=, base state and flags: "MIXED+DRAIN".
	State string
	// Reason is the drain or down reason without the "[user@time]" Slurm
	// appends; "" when none.
	Reason string
	// ReasonTime is when the reason was set, from the "[user@time]" Slurm
	// appends (slurmctld's clock, whole seconds); zero when absent or
	// unreadable.
	ReasonTime time.Time
	// Comment is the node's Comment= (Slurm 20.11 and later); "" when none.
	Comment string
	// Partitions are the partitions the node is in (Partitions=).
	Partitions []string
	// Jobs are the jobs running or completing on the node, "ID STATE".
	Jobs []string
}

// base is the state before the first '+': IDLE, MIXED, ALLOCATED, DOWN, ….
func (n Node) base() string {
	b, _, _ := strings.Cut(n.State, "+")
	return strings.TrimSuffix(b, "*")
}

// has reports whether the state carries flag (DRAIN, COMPLETING, …).
func (n Node) has(flag string) bool {
	parts := strings.Split(n.State, "+")
	for _, p := range parts[1:] {
		if p == flag {
			return true
		}
	}
	return false
}

// OutOfService reports whether the node takes no new jobs: drained,
// draining, down or failed.
func (n Node) OutOfService() bool {
	switch n.base() {
	case "DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING":
		return true
	}
	return n.has("DRAIN") || n.has("FAIL")
}

// HealthReasonPrefix starts the drain reasons health mode sets
// (provision/health). Those drains are health mode's alone: apply treats
// them like an admin's, so a node health mode took out for a fallen-off
// GPU is not resumed by the next apply.
const HealthReasonPrefix = ReasonPrefix + " health: "

// Own reports whether the reason is one apply set: gpuform's, and not
// health mode's.
func (n Node) Own() bool {
	return strings.HasPrefix(n.Reason, ReasonPrefix) && !strings.HasPrefix(n.Reason, HealthReasonPrefix)
}

// Foreign reports whether the node is out of service for a reason that is
// not apply's: an admin's drain, a DOWN node, another health checker,
// gpuform's health mode.
func (n Node) Foreign() bool { return n.OutOfService() && !n.Own() }

// Drained reports whether the node takes no new jobs and has none left:
// no running job and no COMPLETING one (an epilog still cleaning the GPUs
// counts as a job).
func (n Node) Drained() bool {
	if !n.OutOfService() || n.has("COMPLETING") || len(n.Jobs) > 0 {
		return false
	}
	switch n.base() {
	case "IDLE", "DOWN", "DRAIN", "DRAINED", "FAIL":
		return true
	}
	return false
}

// Describe says where the node stands, for progress and errors:
// `State=MIXED+DRAIN, jobs 12 (RUNNING), Reason="…"`.
func (n Node) Describe() string {
	s := "State=" + n.State
	if len(n.Jobs) > 0 {
		ids := make([]string, len(n.Jobs))
		for i, j := range n.Jobs {
			id, st, _ := strings.Cut(j, " ")
			ids[i] = id
			if st != "" {
				ids[i] += " (" + st + ")"
			}
		}
		s += ", jobs " + strings.Join(ids, ", ")
	}
	if n.Reason != "" {
		s += fmt.Sprintf(", Reason=%q", n.Reason)
	}
	return s
}

// Client runs scontrol for one node.
type Client struct {
	// Tr is where scontrol runs: the node itself, or a Slurm client host.
	Tr transport.Transport
	// Name is the Slurm node name; "" means the short host name of the
	// host Tr reaches (Slurm's default NodeName), which is right only when
	// Tr is the node.
	Name string
	// Become runs the changes with privilege (scontrol update needs a
	// Slurm operator or root).
	Become bool
}

// scontrolScript reads or changes the node with scontrol
// (scripts/scontrol.sh): it finds scontrol in the standard places (slurmd
// runs its HealthCheckProgram with no PATH at all), prints the node name it
// used, then does one action.
//
//go:embed scripts/scontrol.sh
var scontrolScript string

// run runs scontrol.sh's action (with value, "" for none) and returns its
// stdout after the node= line, and the node name the script used.
func (c Client) run(ctx context.Context, what, action, value string, become bool) (string, string, error) {
	script := nodesh.Script(scontrolScript, []string{c.Name, action, value})
	res, err := c.Tr.Run(ctx, transport.Command{Script: script, Become: become})
	name := c.Name
	out := string(res.Stdout)
	if first, rest, ok := strings.Cut(out, "\n"); ok && strings.HasPrefix(first, "node=") {
		name, out = strings.TrimPrefix(first, "node="), rest
	}
	if err != nil {
		return "", name, fmt.Errorf("%s Slurm node %q: %w", what, name, err)
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(transport.HostText(string(res.Stderr)))
		if i := strings.LastIndex(msg, "\n"); i >= 0 {
			msg = msg[i+1:]
		}
		return "", name, fmt.Errorf("%s Slurm node %q on %s: exit status %d: %s", what, name, c.Tr.Host(), res.ExitCode, msg)
	}
	return out, name, nil
}

// Show reads the node's state, reason and jobs.
func (c Client) Show(ctx context.Context) (Node, error) {
	out, name, err := c.run(ctx, "read", "show", "", false)
	if err != nil {
		return Node{Name: name}, err
	}
	return parseShow(name, out)
}

// parseShow reads scontrol -o show node's one line and squeue's job lines.
func parseShow(name, out string) (Node, error) {
	n := Node{Name: name}
	show, jobs, _ := strings.Cut(out, "--- jobs\n")
	show = strings.TrimSpace(show)
	// Reason= comes last but for Comment= and its text has spaces; Slurm
	// appends " [user@time]" to it, which ends it before a Comment=.
	if i := strings.Index(show, " Reason="); i >= 0 {
		r := strings.TrimSpace(show[i+len(" Reason="):])
		if j := strings.Index(r, "] Comment="); j >= 0 {
			n.Comment = strings.TrimSpace(r[j+len("] Comment="):])
			r = r[:j+1]
		}
		if j := strings.LastIndex(r, " ["); j >= 0 && strings.HasSuffix(r, "]") {
			stamp := r[j+2 : len(r)-1]
			if _, at, ok := strings.Cut(stamp, "@"); ok {
				if t, err := time.Parse("2006-01-02T15:04:05", at); err == nil {
					n.ReasonTime = t
				}
			}
			r = r[:j]
		}
		if r != "(null)" {
			n.Reason = r
		}
		show = show[:i]
	} else if i := strings.Index(show, " Comment="); i >= 0 {
		n.Comment = strings.TrimSpace(show[i+len(" Comment="):])
		show = show[:i]
	}
	if n.Comment == "(null)" {
		n.Comment = ""
	}
	for _, f := range strings.Fields(show) {
		if v, ok := strings.CutPrefix(f, "State="); ok {
			n.State = v
		}
		if v, ok := strings.CutPrefix(f, "Partitions="); ok && v != "" && v != "(null)" {
			n.Partitions = strings.Split(v, ",")
		}
	}
	if n.State == "" {
		return n, fmt.Errorf("read Slurm node %q: scontrol show node printed no State=", name)
	}
	for _, l := range strings.Split(jobs, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			n.Jobs = append(n.Jobs, l)
		}
	}
	return n, nil
}

// Drain drains the node with reason (made with Reason).
func (c Client) Drain(ctx context.Context, reason string) error {
	_, _, err := c.run(ctx, "drain", "drain", reason, c.Become)
	return err
}

// SetReason replaces the reason of a node that stays out of service.
func (c Client) SetReason(ctx context.Context, reason string) error {
	_, _, err := c.run(ctx, "set the reason of", "reason", reason, c.Become)
	return err
}

// SetComment sets the node's Comment= ("" clears it): health mode's
// note on a node it did not drain because of the circuit breaker, which an
// admin sees in scontrol show node and sinfo -O NodeList,Comment.
func (c Client) SetComment(ctx context.Context, comment string) error {
	comment = strings.Join(strings.Fields(comment), " ")
	if len(comment) > maxReason {
		comment = comment[:maxReason-3] + "..."
	}
	_, _, err := c.run(ctx, "set the comment of", "comment", comment, c.Become)
	return err
}

// Resume returns the node to service. Callers resume only their own
// drains (Node.Own).
func (c Client) Resume(ctx context.Context) error {
	_, _, err := c.run(ctx, "resume", "resume", "", c.Become)
	return err
}

// Reboot asks Slurm to reboot the node once its jobs are done and return it
// to service after slurmd registers again, with reason shown meanwhile.
func (c Client) Reboot(ctx context.Context, reason string) error {
	_, _, err := c.run(ctx, "reboot", "reboot", reason, c.Become)
	return err
}

// Fleet reads every node Slurm knows (scontrol -o show nodes), for health
// mode's circuit breaker: how much of the fleet gpuform already drained.
func (c Client) Fleet(ctx context.Context) ([]Node, error) {
	out, _, err := c.run(ctx, "read the nodes around", "nodes", "", false)
	if err != nil {
		return nil, err
	}
	var nodes []Node
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "NodeName=") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "NodeName="), " ")
		n, err := parseShow(name, line)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("read the nodes around Slurm node %q: scontrol show nodes listed none", c.Name)
	}
	return nodes, nil
}
