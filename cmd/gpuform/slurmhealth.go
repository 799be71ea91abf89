package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/slurm"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/report"
)

// slurmHealthTimeout bounds the scontrol calls of -slurm-drain.
const slurmHealthTimeout = 20 * time.Second

// slurmHealth is verify --local -slurm-drain, gpuform as Slurm's
// HealthCheckProgram. slurmd ignores the program's exit status, so the
// program drains the node itself, as LBNL NHC does: on a failed check it
// drains this node with Reason="gpuform: <check>: <message>"; when every
// check passes it resumes the node only if gpuform drained it. A node
// drained or down for any other reason is never touched. It runs under
// slurmd's bare environment (no PATH, no HOME): the scripts find scontrol
// in the standard directories themselves.
func slurmHealth(ctx context.Context, s Streams, w io.Writer, doc *report.Document) error {
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
	failed := firstFailure(doc)
	switch {
	case n.Foreign():
		fmt.Fprintf(w, "Slurm: node %s is out of service for a reason that is not gpuform's (%s); left alone.\n", n.Name, n.Describe())
	case failed != "":
		reason := slurm.Reason(failed)
		if n.Own() && n.Reason == reason {
			fmt.Fprintf(w, "Slurm: node %s stays drained (%s).\n", n.Name, n.Describe())
			return nil
		}
		// An older gpuform drain gets the current failure as its reason.
		if n.Own() && n.OutOfService() {
			err = cl.SetReason(ctx, reason)
		} else {
			err = cl.Drain(ctx, reason)
		}
		if err != nil {
			return fmt.Errorf("-slurm-drain: %w", err)
		}
		fmt.Fprintf(w, "Slurm: drained node %s: Reason=%q.\n", n.Name, reason)
	case n.Own() && n.OutOfService():
		if err := cl.Resume(ctx); err != nil {
			return fmt.Errorf("-slurm-drain: %w", err)
		}
		fmt.Fprintf(w, "Slurm: resumed node %s, drained by gpuform (Reason=%q), every check passes now.\n", n.Name, n.Reason)
	default:
		fmt.Fprintf(w, "Slurm: node %s is in service (State=%s); every check passed.\n", n.Name, n.State)
	}
	return nil
}

// firstFailure is "<check>: <short message>" for the first failed or
// errored check, "" when every check passed.
func firstFailure(doc *report.Document) string {
	for _, h := range doc.Hosts {
		for _, c := range h.Checks {
			if c.Status != verify.StatusFail && c.Status != verify.StatusError {
				continue
			}
			msg := c.Message
			if msg == "" {
				msg = fmt.Sprintf("expected %s, observed %s", c.Expected, c.Observed)
			}
			msg, _, _ = strings.Cut(strings.TrimSpace(msg), "\n")
			if len(msg) > 120 {
				msg = msg[:117] + "..."
			}
			return c.ID + ": " + msg
		}
	}
	return ""
}
