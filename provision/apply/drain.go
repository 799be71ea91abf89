package apply

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpuform/gpuform/provision/transport"
)

// Slurm drain. A host is drained before its first step, so no new job lands
// on it while its driver or runtime changes, and apply waits until the jobs
// already running have finished (State=IDLE+DRAIN, Slurm's "drained"). Once
// the host has converged (and rebooted, when that was needed and allowed)
// it is resumed. A host that failed, or waits for a reboot apply may not do,
// stays drained with a reason saying why, so a broken node never returns to
// service on its own.

// drainReasonPrefix starts every reason gpuform sets, so an operator (and
// gpuform) can tell its drains from others'.
const drainReasonPrefix = "gpuform: "

// slurmNodeScript prints the host's Slurm node name: its short host name,
// Slurm's default NodeName.
const slurmNodeScript = `command -v scontrol >/dev/null 2>&1 || { echo 'scontrol is not installed on this node: rollout { drain = "slurm" } needs the Slurm client here' >&2; exit 127; }
n=$(hostname -s 2>/dev/null || hostname)
`

// drainHost drains the host and waits until it is drained.
func drainHost(ctx context.Context, tr transport.Transport, reason string, opts Options) error {
	script := slurmNodeScript + `scontrol update NodeName="$n" State=DRAIN Reason=` + transport.Quote(drainReasonPrefix+reason) + "\n"
	res, err := tr.Run(ctx, transport.Command{Script: script, Become: true})
	if err != nil {
		return fmt.Errorf("drain in Slurm: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("drain in Slurm: exit status %d: %s", res.ExitCode, lastLines(string(res.Stderr), 2))
	}
	deadline := opts.Now().Add(opts.DrainTimeout)
	for {
		state, err := slurmState(ctx, tr)
		if err != nil {
			return err
		}
		if drained(state) {
			return nil
		}
		if !opts.Now().Before(deadline) {
			return fmt.Errorf("still running jobs %s after it was drained (Slurm state %s); it stays drained, nothing was changed", opts.DrainTimeout, state)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted while waiting for jobs to finish (Slurm state %s); it stays drained, nothing was changed", state)
		case <-time.After(opts.DrainPoll):
		}
	}
}

// resumeHost returns the host to service.
func resumeHost(ctx context.Context, tr transport.Transport) error {
	res, err := tr.Run(ctx, transport.Command{Script: slurmNodeScript + `scontrol update NodeName="$n" State=RESUME` + "\n", Become: true})
	if err != nil {
		return fmt.Errorf("resume in Slurm: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("resume in Slurm: exit status %d: %s", res.ExitCode, lastLines(string(res.Stderr), 2))
	}
	return nil
}

// keepDrained updates the drain reason of a host that stays out of service.
func keepDrained(ctx context.Context, tr transport.Transport, reason string) {
	script := slurmNodeScript + `scontrol update NodeName="$n" Reason=` + transport.Quote(drainReasonPrefix+reason) + "\n"
	_, _ = tr.Run(context.WithoutCancel(ctx), transport.Command{Script: script, Become: true})
}

// slurmState reads the node's State= from scontrol show node.
func slurmState(ctx context.Context, tr transport.Transport) (string, error) {
	res, err := tr.Run(ctx, transport.Command{Script: slurmNodeScript + `scontrol show node "$n"` + "\n"})
	if err != nil {
		return "", fmt.Errorf("read Slurm state: %w", err)
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("read Slurm state: exit status %d: %s", res.ExitCode, lastLines(string(res.Stderr), 2))
	}
	for _, f := range strings.Fields(string(res.Stdout)) {
		if v, ok := strings.CutPrefix(f, "State="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("read Slurm state: scontrol show node printed no State=")
}

// drained reports whether a Slurm state means drained with no job left:
// IDLE+DRAIN (or DOWN+DRAIN); ALLOCATED+DRAIN and MIXED+DRAIN are still
// draining.
func drained(state string) bool {
	parts := strings.Split(state, "+")
	hasDrain := false
	for _, p := range parts[1:] {
		if p == "DRAIN" {
			hasDrain = true
		}
	}
	return hasDrain && (parts[0] == "IDLE" || parts[0] == "DOWN")
}
