package main

import (
	"context"
	"fmt"
	"io"
	"os"
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

// slurmHealth is verify --local -slurm-drain, gpuform as Slurm's
// HealthCheckProgram. slurmd ignores the program's exit status, so the
// program drains the node itself, as LBNL NHC does. What drains is the
// remediation catalogue's call (provision/health): a failed check whose
// action takes the node out drains it at once with
// Reason="gpuform: <check>: <action>: <message>"; a monitor-class Xid
// drains only once it has been seen health { drain_after } times within
// drain_window (sightings kept in /var/lib/gpuform/health.json); and no
// new drain happens while more than max_drained_share of the Slurm fleet
// is already drained by gpuform (the circuit breaker), which fails the
// run loudly instead. When nothing calls for a drain it resumes the node
// only if gpuform drained it. A node drained or down for any other reason
// is never touched. It runs under slurmd's bare environment (no PATH, no
// HOME): the scripts find scontrol in the standard directories themselves.
func slurmHealth(ctx context.Context, s Streams, w io.Writer, doc *report.Document, hs *spec.Health) error {
	// An unreachable slurmctld must not hold slurmd's health check
	// forever: scontrol retries for a long time on its own.
	ctx, cancel := context.WithTimeout(ctx, slurmHealthTimeout)
	defer cancel()
	env := map[string]string{}
	if v := s.Getenv("SLURM_CONF"); v != "" {
		env["SLURM_CONF"] = v
	}
	host, _ := os.Hostname()
	cl := slurm.Client{Tr: local.New("local://"+host, local.WithEnv(env)), Name: s.Getenv("SLURMD_NODENAME")}
	n, err := cl.Show(ctx)
	if err != nil {
		return fmt.Errorf("-slurm-drain: %w", err)
	}
	cl.Name = n.Name

	var p health.Policy
	p.DrainAfter, p.DrainWindow, p.MaxDrainedShare, _ = hs.Policy()
	// GPUFORM_HEALTH_STATE moves the sightings file (tests; nodes whose
	// /var/lib is read-only).
	statePath := s.Getenv("GPUFORM_HEALTH_STATE")
	if statePath == "" {
		statePath = health.DefaultStateFile
	}
	var dec health.Decision
	if err := health.Update(statePath, func(st *health.State) error {
		dec = health.Decide(doc, st, time.Now(), p)
		return nil
	}); err != nil {
		return fmt.Errorf("-slurm-drain: %w", err)
	}
	for _, x := range dec.Watching {
		fmt.Fprintf(w, "Slurm: watching node %s: %s (drains at %d).\n", n.Name, x, p.DrainAfter)
	}

	switch {
	case n.Foreign():
		fmt.Fprintf(w, "Slurm: node %s is out of service for a reason that is not gpuform's (%s); left alone.\n", n.Name, n.Describe())
	case dec.Drain:
		reason := slurm.Reason(dec.Reason)
		if n.Own() && n.Reason == reason {
			fmt.Fprintf(w, "Slurm: node %s stays drained (%s).\n", n.Name, n.Describe())
			return nil
		}
		// An older gpuform drain gets the current failure as its reason.
		if n.Own() && n.OutOfService() {
			if err := cl.SetReason(ctx, reason); err != nil {
				return fmt.Errorf("-slurm-drain: %w", err)
			}
			fmt.Fprintf(w, "Slurm: node %s stays drained: Reason=%q.\n", n.Name, reason)
			return nil
		}
		// The circuit breaker: a new drain only while gpuform holds no
		// more than its share of the fleet.
		fleet, err := cl.Fleet(ctx)
		if err != nil {
			return fmt.Errorf("-slurm-drain: circuit breaker: %w", err)
		}
		if open, msg := health.Breaker(slurm.DrainedByGpuform(fleet), len(fleet), p); open {
			fmt.Fprintf(s.Err, "gpuform: CIRCUIT BREAKER OPEN: not draining node %s (%s): %s.\n", n.Name, reason, msg)
			return exitError{ExitFailed}
		}
		if err := cl.Drain(ctx, reason); err != nil {
			return fmt.Errorf("-slurm-drain: %w", err)
		}
		fmt.Fprintf(w, "Slurm: drained node %s: Reason=%q.\n", n.Name, reason)
	case n.Own() && n.OutOfService():
		if err := cl.Resume(ctx); err != nil {
			return fmt.Errorf("-slurm-drain: %w", err)
		}
		fmt.Fprintf(w, "Slurm: resumed node %s, drained by gpuform (Reason=%q), nothing calls for a drain now.\n", n.Name, n.Reason)
	default:
		fmt.Fprintf(w, "Slurm: node %s is in service (State=%s); %s.\n", n.Name, n.State, inServiceNote(doc))
	}
	return nil
}

// inServiceNote says why a node stays in service.
func inServiceNote(doc *report.Document) string {
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
	return "the failed checks call for no drain now: " + strings.Join(ids, ", ")
}
