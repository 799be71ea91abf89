package apply

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuform/gpuform/internal/text"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/slurm"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// Slurm drain. Before its first step a host is drained, so no new job
// lands on it while its driver or runtime changes, and apply waits until
// no job runs or completes there (an epilog cleaning the GPUs is still a
// job). Once the host has converged (and rebooted, when that was needed and
// allowed) it is resumed. A host that failed, or waits for a reboot apply
// may not do, stays drained with a reason saying why, so a broken node
// never returns to service on its own.
//
// gpuform resumes only its own drains (reason "gpuform: …"). A host that
// is drained or down for anyone else's reason (an admin's RMA ticket, a
// failed PSU, NHC) is skipped, or with rollout { foreign_drain = "change" }
// changed and left as it was, reason and all.

// Default drain wait limits; rollout { drain_timeout, drain_poll } and
// Options change them.
const (
	defaultDrainTimeout = 2 * time.Hour
	defaultDrainPoll    = 30 * time.Second
)

// drainLimits is how long apply waits for a host's jobs and how often it
// looks: Options first, then the rollout block, then the defaults.
func drainLimits(nr plan.NodeRollout, opts Options) (timeout, poll time.Duration) {
	timeout, poll = opts.DrainTimeout, opts.DrainPoll
	if timeout == 0 {
		timeout = nr.DrainTimeout.D
	}
	if poll == 0 {
		poll = nr.DrainPoll.D
	}
	if timeout == 0 {
		timeout = defaultDrainTimeout
	}
	if poll == 0 {
		poll = defaultDrainPoll
	}
	return timeout, poll
}

// applySlurm runs applyDrained between a drain and a resume.
func applySlurm(ctx context.Context, tr transport.Transport, lock *Lock, hp *plan.HostPlan, node *spec.Node, nr plan.NodeRollout, r HostResult, opts Options) HostResult {
	cl, done, err := plan.SlurmClient(ctx, tr, hp.Host, nr, opts.Target)
	if err != nil {
		r.Status, r.Error = Failed, err.Error()
		return r
	}
	defer done()
	before, err := cl.Show(ctx)
	if err != nil {
		r.Status, r.Error = Failed, err.Error()
		return r
	}
	cl.Name = before.Name
	foreign := before.Foreign()
	if foreign && nr.ForeignDrain != spec.ForeignDrainChange {
		r.Status = Skipped
		r.Slurm = "left alone: out of service for another reason"
		r.Error = fmt.Sprintf("Slurm node %s is out of service for a reason that is not gpuform's (%s); left alone. Set rollout { foreign_drain = \"change\" } to change it and leave it drained", before.Name, before.Describe())
		return r
	}
	stale := before.Own() && before.OutOfService()
	reason := slurm.Reason("apply by " + opts.Owner)
	switch {
	case foreign:
		emit(opts, hp.Host, fmt.Sprintf("Slurm node %s is out of service for someone else (%s): changing it, its state and reason stay", before.Name, before.Describe()))
	case stale:
		emit(opts, hp.Host, fmt.Sprintf("Slurm node %s is still drained by gpuform (%s): taking the drain over", before.Name, before.Describe()))
		err = cl.SetReason(ctx, reason)
	default:
		emit(opts, hp.Host, fmt.Sprintf("draining Slurm node %s (%s)", before.Name, before.Describe()))
		err = cl.Drain(ctx, reason)
	}
	if err != nil {
		r.Status, r.Error = Failed, err.Error()
		return r
	}
	if err := waitDrained(ctx, cl, hp.Host, nr, opts); err != nil {
		r.Status = Failed
		// Nothing was changed: a drain of this run is lifted again, an
		// older one of gpuform's keeps its reason, anyone else's is as it
		// was.
		uctx := context.WithoutCancel(ctx)
		switch {
		case foreign:
			r.Error = err.Error() + "; nothing was changed and its Slurm state is as it was"
		case stale:
			_ = cl.SetReason(uctx, before.Reason)
			r.Error = err.Error() + "; nothing was changed and it stays drained as before"
		default:
			if rerr := cl.Resume(uctx); rerr != nil {
				r.Error = err.Error() + "; nothing was changed, but resuming it failed: " + rerr.Error()
			} else {
				r.Error = err.Error() + "; nothing was changed, it is resumed"
				r.Slurm = "drained, nothing changed, resumed"
			}
		}
		return r
	}
	r = applyDrained(ctx, tr, lock, hp, node, nr, r, opts, cl)
	uctx := context.WithoutCancel(ctx)
	if foreign {
		r.Slurm = fmt.Sprintf("left out of service as found (%s)", before.Describe())
		return r
	}
	switch r.Status {
	case Succeeded, Rebooted:
		if nr.SlurmClient == "" {
			// The host reconnects after a reboot; a fresh transport
			// resumes it if the old one is gone.
			t := reconnect(ctx, tr, hp, opts)
			if t != tr {
				defer t.Close()
			}
			cl.Tr = t
		}
		now, err := cl.Show(uctx)
		switch {
		case err != nil:
			r.Status, r.Error = Failed, err.Error()+" (the host converged but stays drained)"
		case !now.Own() && now.OutOfService():
			// Someone drained it meanwhile: their drain stands.
			r.Slurm = fmt.Sprintf("not resumed: drained by someone else meanwhile (%s)", now.Describe())
		default:
			if err := cl.Resume(uctx); err != nil {
				r.Status, r.Error = Failed, err.Error()+" (the host converged but stays drained)"
			} else {
				r.Slurm = "drained and resumed"
			}
		}
	case RebootPending:
		if r.Slurm == "" {
			_ = cl.SetReason(uctx, slurm.Reason("reboot pending after apply"))
			r.Slurm = "stays drained: reboot pending"
		}
	default:
		_ = cl.SetReason(uctx, slurm.Reason("apply failed: "+text.FirstLine(r.Error)))
		r.Slurm = "stays drained: apply failed"
	}
	return r
}

// waitDrained polls the node until no job runs or completes there.
func waitDrained(ctx context.Context, cl slurm.Client, host string, nr plan.NodeRollout, opts Options) error {
	timeout, poll := drainLimits(nr, opts)
	deadline := opts.Now().Add(timeout)
	last := ""
	for {
		n, err := cl.Show(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted while waiting for Slurm node %s's jobs", cl.Name)
			}
			return err
		}
		if n.Drained() {
			emit(opts, host, fmt.Sprintf("Slurm node %s is drained (%s)", n.Name, n.Describe()))
			return nil
		}
		if d := n.Describe(); d != last {
			emit(opts, host, fmt.Sprintf("waiting for Slurm node %s's jobs: %s (up to %s, every %s)", n.Name, d, timeout, poll))
			last = d
		}
		if !opts.Now().Before(deadline) {
			return fmt.Errorf("Slurm node %s still has jobs %s after it was drained (%s; rollout { drain_timeout } sets the limit)", n.Name, timeout, n.Describe()) //nolint:staticcheck // Slurm is a name
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted while waiting for Slurm node %s's jobs (%s)", n.Name, n.Describe())
		case <-time.After(poll):
		}
	}
}

// resumeStale resumes a host the plan found drained by gpuform with nothing
// left to do (an interrupted apply, a reboot finished by hand).
func resumeStale(ctx context.Context, hp *plan.HostPlan, nr plan.NodeRollout, r HostResult, opts Options) HostResult {
	r.Status = Succeeded
	tr, err := opts.Target.Connect(ctx, hp.Target.Host)
	if err != nil {
		r.Status, r.Error = Failed, err.Error()
		return r
	}
	defer tr.Close()
	cl, done, err := plan.SlurmClient(ctx, tr, hp.Host, nr, opts.Target)
	if err != nil {
		r.Status, r.Error = Failed, err.Error()
		return r
	}
	defer done()
	n, err := cl.Show(ctx)
	if err != nil {
		r.Status, r.Error = Failed, err.Error()
		return r
	}
	if !n.Own() || !n.OutOfService() {
		return r
	}
	cl.Name = n.Name
	if err := cl.Resume(ctx); err != nil {
		r.Status, r.Error = Failed, err.Error()
		return r
	}
	r.Slurm = fmt.Sprintf("resumed: drained by gpuform (%q) with nothing left to do", n.Reason)
	emit(opts, hp.Host, "Slurm node "+n.Name+" "+r.Slurm)
	return r
}
