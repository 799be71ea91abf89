package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpuform/gpuform/provision/health"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/slurm"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/spec"
)

// slurmHealthTimeout bounds the scontrol calls of -slurm-drain.
const slurmHealthTimeout = 20 * time.Second

// breakerSettle is how long a node waits after its drain before it reads
// the fleet's drains: slurmctld stamps a drain with its clock in whole
// seconds while it holds its node write lock, so once a second has passed
// since this drain returned, every drain stamped no later than this one
// is visible to a read (docs/guide/bad-node.md, "Circuit breaker").
const breakerSettle = 1100 * time.Millisecond

// slurmHealth is verify --local -slurm-drain, gpuform as Slurm's
// HealthCheckProgram. slurmd ignores the program's exit status, so the
// program drains the node itself, as LBNL NHC does. What drains is the
// remediation catalogue's call (provision/health): a failed check whose
// action takes the node out drains it at once with
// Reason="gpuform: health: <check>: <action>: <message>"; a performance or
// link failure drains only when it fails again after health {
// confirm_delay } (rerun runs the checks again); a monitor-class Xid
// drains only once it has been seen health { drain_after } times within
// drain_window (sightings kept in /var/lib/gpuform/health.json, which
// fails closed: an unusable state never stops a drain); and the circuit
// breaker keeps health mode's drains to max_drained_share of the node
// block's hosts, atomically across nodes checking at once. When nothing
// calls for a drain it resumes the node only if health mode drained it.
// A node drained or down for any other reason (apply's drains, an
// admin's, DOWN) is never touched. It runs under slurmd's bare
// environment (no PATH, no HOME): the scripts find scontrol in the
// standard directories themselves.
func slurmHealth(ctx context.Context, s Streams, w io.Writer, doc *report.Document, node *spec.Node, rerun func(context.Context) *report.Document) error {
	cl := healthClient(s)
	// An unreachable slurmctld must not hold slurmd's health check
	// forever: scontrol retries for a long time on its own.
	sctx, cancel := context.WithTimeout(ctx, slurmHealthTimeout)
	n, err := cl.Show(sctx)
	cancel()
	if err != nil {
		return fmt.Errorf("-slurm-drain: %w", err)
	}
	cl.Name = n.Name

	p, err := healthPolicy(s, node)
	if err != nil {
		return err
	}
	dec, stateErr := decideHealth(s, doc, p)
	for _, x := range dec.NotApplicable {
		fmt.Fprintf(w, "Slurm: node %s: %s.\n", n.Name, x)
	}
	for _, x := range dec.Watching {
		fmt.Fprintf(w, "Slurm: watching node %s: %s (drains at %d).\n", n.Name, x, p.DrainAfter)
	}
	// Confirm before drain: a performance or link failure is checked
	// again before the node leaves service.
	if dec.Drain && len(dec.Confirm) > 0 && !n.OutOfService() && rerun != nil {
		fmt.Fprintf(w, "Slurm: node %s: %s failed; running the checks again in %s before draining.\n", n.Name, dec.Confirm[0].ID, p.ConfirmDelay)
		var runs []string
		if dec, runs, err = health.ConfirmAfter(ctx, dec, p, rerun); err != nil {
			return fmt.Errorf("-slurm-drain: %w", err)
		}
		for _, r := range runs {
			fmt.Fprintf(w, "Slurm: node %s: %s.\n", n.Name, r)
		}
		if !dec.Drain {
			fmt.Fprintf(w, "Slurm: node %s: the failure did not repeat; not drained.\n", n.Name)
		}
		// The node may have changed hands meanwhile (an admin's drain):
		// act on what Slurm says now.
		sctx, cancel := context.WithTimeout(ctx, slurmHealthTimeout)
		n, err = cl.Show(sctx)
		cancel()
		if err != nil {
			return fmt.Errorf("-slurm-drain: %w", err)
		}
	}

	sctx, cancel = context.WithTimeout(ctx, slurmHealthTimeout)
	defer cancel()
	var ret error
	if stateErr != nil {
		ret = exitError{ExitFailed}
	}
	switch {
	case n.OutOfService() && !health.Owns(n):
		fmt.Fprintf(w, "Slurm: node %s is out of service for a reason that is not health mode's (%s); left alone.\n", n.Name, n.Describe())
	case dec.Drain && n.OutOfService():
		// The drain keeps its first reason and time: its place in the
		// circuit breaker's order is its time in Slurm.
		if r := health.Reason(dec.Reason); r != n.Reason {
			fmt.Fprintf(w, "Slurm: node %s stays drained (%s); now also: %s.\n", n.Name, n.Describe(), dec.Reason)
		} else {
			fmt.Fprintf(w, "Slurm: node %s stays drained (%s).\n", n.Name, n.Describe())
		}
	case dec.Drain:
		text := dec.Reason
		if stateErr != nil {
			text = "[state unusable] " + text
		}
		err := drainBehindBreaker(sctx, s, w, "-slurm-drain", cl, n, node, health.Reason(text), p)
		if errors.As(err, new(breakerOpenError)) {
			// Said on standard error; slurmd ignores the status.
			return exitError{ExitFailed}
		}
		if err != nil {
			return err
		}
	case n.OutOfService() && !health.Lifts(n):
		// A prolog's or epilog's drain rests on what this run may not
		// have judged (the quick tier, one job's Xids).
		fmt.Fprintf(w, "Slurm: node %s stays drained (%s): a prolog or epilog gate's drain, which a health check does not lift; resume it after repair (scontrol update NodeName=%s State=RESUME).\n", n.Name, n.Describe(), n.Name)
	case n.OutOfService():
		if err := cl.Resume(sctx); err != nil {
			return fmt.Errorf("-slurm-drain: %w", err)
		}
		fmt.Fprintf(w, "Slurm: resumed node %s, drained by health mode (Reason=%q), nothing calls for a drain now.\n", n.Name, n.Reason)
		clearBreakerComment(sctx, cl, n)
	default:
		fmt.Fprintf(w, "Slurm: node %s is in service (State=%s); %s.\n", n.Name, n.State, inServiceNote(doc, dec))
		clearBreakerComment(sctx, cl, n)
	}
	return ret
}

// drainBehindBreaker drains the node unless the circuit breaker holds:
// with the fleet's limit of health-mode drains already held it does not
// drain; otherwise it drains, waits breakerSettle, reads the fleet's
// drains again and keeps its own only when it is among the first Limit in
// the order every node computes alike (health.Admit), else resumes itself
// at once, notes the open breaker in the node's Comment and fails loudly.
// flag names the mode in errors (-slurm-drain, -slurm-prolog, …); a
// breaker that holds the drain back returns a breakerOpenError.
func drainBehindBreaker(ctx context.Context, s Streams, w io.Writer, flag string, cl slurm.Client, n slurm.Node, node *spec.Node, reason string, p health.Policy) error {
	fleet := func(nodes []slurm.Node) map[string]bool {
		if node != nil && node.Health != nil && node.Health.FleetPartition.Set {
			return partitionNames(nodes, node.Health.FleetPartition.V)
		}
		return fleetNames(node)
	}
	open := func(a health.Admission, undone bool) error {
		msg := a.Open(p)
		if undone {
			msg += " (its own drain, made before the others' were visible, was undone at once)"
		}
		if err := cl.SetComment(ctx, health.CommentPrefix+"not drained ("+strings.TrimPrefix(reason, health.ReasonPrefix)+")"); err != nil {
			fmt.Fprintf(s.Err, "gpuform: could not note the open breaker in node %s's Comment: %v.\n", n.Name, err)
		}
		fmt.Fprintf(s.Err, "gpuform: CIRCUIT BREAKER OPEN: not draining node %s (%s): %s.\n", n.Name, reason, msg)
		return breakerOpenError{}
	}
	// GPUFORM_HEALTH_BARRIER (tests): wait for this file to exist, so
	// that many nodes reach the breaker at the same instant.
	if b := s.Getenv("GPUFORM_HEALTH_BARRIER"); b != "" {
		for _, err := os.Stat(b); err != nil && ctx.Err() == nil; _, err = os.Stat(b) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	nodes, err := cl.Fleet(ctx)
	if err != nil {
		return fmt.Errorf("%s: circuit breaker: %w", flag, err)
	}
	if a := health.Held(n.Name, nodes, fleet(nodes), p); !a.Keep {
		return open(a, false)
	}
	if err := cl.Drain(ctx, reason); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(breakerSettle):
	}
	nodes, err = cl.Fleet(ctx)
	if err != nil {
		// Without the fleet the breaker cannot tell: the drain is undone
		// so that it never holds more than its share.
		undoOwnDrain(ctx, cl, reason)
		return fmt.Errorf("%s: circuit breaker: %w (the drain of node %s was undone)", flag, err, n.Name)
	}
	a := health.Admit(n.Name, nodes, fleet(nodes), p)
	switch {
	case a.Lost:
		fmt.Fprintf(w, "Slurm: node %s: its drain was changed by someone else meanwhile; left alone.\n", n.Name)
		return nil
	case !a.Keep:
		undoOwnDrain(ctx, cl, reason)
		return open(a, true)
	}
	fmt.Fprintf(w, "Slurm: drained node %s: Reason=%q (%d of %d allowed in a fleet of %d).\n", n.Name, reason, len(a.Ahead)+1, a.Limit, a.Fleet)
	clearBreakerComment(ctx, cl, n)
	return nil
}

// breakerOpenError is the circuit breaker holding a drain back (said on
// standard error already): exit 1 for health mode, whose exit status
// slurmd ignores; a gate lets the job start instead, since its non-zero
// exit would have Slurm drain the node itself.
type breakerOpenError struct{}

func (breakerOpenError) Error() string { return "circuit breaker open" }

// healthClient is the Slurm client of this node: the node named by
// SLURMD_NODENAME (else, for scontrol.sh, the short host name), with
// slurmd's SLURM_CONF.
func healthClient(s Streams) slurm.Client {
	return slurm.Client{Tr: slurmLocal(s), Name: s.Getenv("SLURMD_NODENAME")}
}

// slurmLocal is this machine as a transport for scontrol, with slurmd's
// SLURM_CONF.
func slurmLocal(s Streams) *local.Transport {
	env := map[string]string{}
	if v := s.Getenv("SLURM_CONF"); v != "" {
		env["SLURM_CONF"] = v
	}
	host, _ := os.Hostname()
	return local.New("local://"+host, local.WithEnv(env))
}

// healthPolicy is the node block's health { } as health mode acts on it.
func healthPolicy(s Streams, node *spec.Node) (health.Policy, error) {
	var p health.Policy
	var hs *spec.Health
	if node != nil {
		hs = node.Health
	}
	p.DrainAfter, p.DrainWindow, p.MaxDrainedShare, _ = hs.Policy()
	p.ConfirmDelay = hs.ConfirmDelayOrDefault()
	var err error
	p.KB, err = s.KB()
	return p, err
}

// decideHealth judges the report against the sightings kept on the node
// and records this run's. A state that cannot be used comes back as the
// error, said on standard error already: the decision was made without
// the earlier sightings, and a failure that drains on sight drains all
// the same (fail closed).
func decideHealth(s Streams, doc *report.Document, p health.Policy) (health.Decision, error) {
	// GPUFORM_HEALTH_STATE moves the sightings file (tests; nodes whose
	// /var/lib is read-only).
	statePath := s.Getenv("GPUFORM_HEALTH_STATE")
	if statePath == "" {
		statePath = health.DefaultStateFile
	}
	var dec health.Decision
	stateErr := health.Update(statePath, func(st *health.State) {
		dec = health.Decide(doc, st, time.Now(), p)
	})
	var se *health.StateError
	if errors.As(stateErr, &se) {
		// Fail closed: the state only counts repeats; a failure that
		// drains on sight drains without it, and says so.
		fmt.Fprintf(s.Err, "gpuform: %v; judged this run without the earlier sightings.\n", stateErr)
	}
	return dec, stateErr
}

// undoOwnDrain resumes the node only while it still carries reason, the
// drain this run set: an admin's drain made meanwhile is kept.
func undoOwnDrain(ctx context.Context, cl slurm.Client, reason string) {
	if now, err := cl.Show(ctx); err == nil && now.Reason == reason {
		_ = cl.Resume(ctx)
	}
}

// clearBreakerComment removes health mode's note of an open breaker from
// a node; any other comment is kept.
func clearBreakerComment(ctx context.Context, cl slurm.Client, n slurm.Node) {
	if strings.HasPrefix(n.Comment, health.CommentPrefix) {
		_ = cl.SetComment(ctx, "")
	}
}

// fleetNames are the Slurm node names of the node block's hosts (rollout
// { slurm_node_name }, else each host's short name): the fleet the
// circuit breaker divides by, never every node Slurm knows.
func fleetNames(node *spec.Node) map[string]bool {
	names := map[string]bool{}
	if node == nil {
		return names
	}
	template := "{short}"
	if node.Rollout != nil && node.Rollout.SlurmNodeName.Set {
		template = node.Rollout.SlurmNodeName.V
	}
	for _, h := range node.Hosts {
		if name, err := spec.SlurmNodeName(template, h.Name); err == nil {
			names[name] = true
		}
	}
	return names
}

// partitionNames are the Slurm nodes in partition (health {
// fleet_partition }).
func partitionNames(nodes []slurm.Node, partition string) map[string]bool {
	names := map[string]bool{}
	for _, n := range nodes {
		if slices.Contains(n.Partitions, partition) {
			names[n.Name] = true
		}
	}
	return names
}

// inServiceNote says why a node stays in service.
func inServiceNote(doc *report.Document, dec health.Decision) string {
	if doc.OK() {
		return "every check passed"
	}
	var ids []string
	for _, h := range doc.Hosts {
		for _, c := range h.Checks {
			if c.Remedy != nil && (c.Status == "fail" || c.Status == "error") {
				ids = append(ids, c.ID+" ("+string(c.Remedy.Action)+")")
			}
		}
	}
	if len(ids) == 0 && len(dec.NotApplicable) > 0 {
		return "the failed checks do not apply to this node's hardware"
	}
	return "the failed checks call for no drain now: " + strings.Join(ids, ", ")
}
