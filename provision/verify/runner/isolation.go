package runner

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gpuform/gpuform/internal/cmdline"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/isolate"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/spec"
)

// groupIsolation is one group's isolation with what the per-host checks
// need besides the report's section.
type groupIsolation struct {
	report.Isolation
	groupFailed    bool
	stragglersFail bool
	// cut: the run's Options.Deadline (verify -deadline) ended the
	// isolation before it decided: what it left is not run.
	cut bool
	// kb is the knowledge base whose remediation catalogue gives a failed
	// isolation check its remedy, as every other check gets its own.
	kb *kb.KB
}

// isolationMode reads verify { isolation }; unset is on_failure.
func isolationMode(n *spec.Node) spec.Isolation {
	if n.Verify != nil && n.Verify.Isolation.Set {
		return n.Verify.Isolation.V
	}
	return spec.IsolationOnFailure
}

// runGroup runs one multi-node test over a node group from its first host
// and, when the run failed (or the spec asks always), isolates the bad
// node pairwise within what is left of the tier's budget.
func runGroup(ctx context.Context, o Options, group []target.Host, exp verify.Expectation, nt verify.NCCLExpectation) (res nccltest.Result, iso *groupIsolation, absent map[string]string) {
	start := time.Now()
	budget := o.Budget
	if budget == 0 {
		budget = o.Tier.Budget()
	}
	timeout := nt.Timeout
	if timeout == 0 {
		timeout = budget
	}
	first := group[0]
	if err := RefuseLocalNCCL(first, o); err != nil {
		return nccltest.Result{Failure: err.Error()}, nil, nil
	}
	launch := hostNames(ctx, o, group)
	names := make([]string, len(group))
	for i, h := range group {
		names[i] = launch[h.Host.Name]
	}
	cmd := nt.Command
	if len(group) > 1 && !cmdline.NamesHosts(cmd) {
		// A command that names no hosts runs on the group's: without a
		// host list mpirun starts every rank here, and srun anywhere in
		// the allocation.
		if c, err := cmdline.ForHosts(cmd, names, len(group), exp.GPUCount); err == nil {
			cmd = c
		}
	}
	var err error
	if o.Launch != nil {
		res, err = o.Launch(ctx, first, cmd, timeout)
	} else {
		t, cerr := o.Target.Connect(ctx, first.Host)
		if cerr != nil {
			return nccltest.Result{Failure: fmt.Sprintf("cannot reach %s to launch the multi-node test: %v", first.Host.Name, cerr)}, nil, nil
		}
		res, err = nccltest.RunTest(ctx, t, cmd, timeout)
		t.Close()
	}
	if err != nil && !o.Deadline.IsZero() && ctx.Err() != nil {
		// The run's -deadline ended the group's run: what did not
		// finish is not run, never failed on a cut run nor passed.
		return nccltest.Result{Command: res.Command, NotRun: "the run's -deadline ended the group's run before it finished"}, nil, nil
	}
	var nl *NotLaunchedError
	if errors.As(err, &nl) {
		// The engine could not start the command at all: the run says
		// nothing about the nodes, so it is not run, not failed (and
		// nothing to isolate), never passed.
		return nccltest.Result{Command: cmd, NotRun: "the engine did not run the group's test: " + nl.Error()}, nil, nil
	}
	if err != nil && res.Failure == "" {
		res.Failure = err.Error()
	}
	absent = absentHosts(res, group, launch)

	mode := isolationMode(first.Node)
	judged, _, _ := verify.JudgeMultiNodeRun(nil, exp, nt, res)
	failed := judged.Status == verify.StatusFail
	var trigger string
	switch {
	case mode == spec.IsolationOff:
		return res, nil, absent
	case failed:
		trigger = fmt.Sprintf("the %d-node run failed: %s", len(group), judged.Message)
	case mode == spec.IsolationAlways:
		trigger = fmt.Sprintf("verify { isolation = \"always\" }; the %d-node run: %s", len(group), judged.Status)
	default:
		return res, nil, absent
	}
	stragglers, margin := verify.OutlierSettings(first.Node)
	hosts := make([]string, len(group))
	byName := map[string]target.Host{}
	for i, h := range group {
		hosts[i] = h.Host.Name
		byName[h.Host.Name] = h
	}
	deadline := start.Add(budget)
	if !o.Deadline.IsZero() && o.Deadline.Before(deadline) {
		deadline = o.Deadline
	}
	iso = &groupIsolation{
		Isolation:      report.Isolation{Node: first.Node.Name, Test: nt.Name, Mode: string(mode), Trigger: trigger, Hosts: hosts, Budget: budget},
		groupFailed:    failed,
		stragglersFail: stragglers == spec.OutliersFail,
		kb:             o.KB,
	}
	isoStart := time.Now()
	if len(group) < 3 {
		// Two nodes make one pair, which is the run that already failed:
		// without a third node neither can be told from the other.
		iso.Result = isolate.Result{Pairs: []isolate.Pair{}, Culprits: []isolate.Named{}, Incomplete: fmt.Sprintf("a group of %d node(s) has no third node to pair with", len(group))}
		return res, iso, absent
	}
	run := func(ctx context.Context, pair [2]string) isolate.Outcome {
		a, b := byName[pair[0]], byName[pair[1]]
		return runPair(ctx, o, exp, nt, len(group), a, [2]string{launch[a.Host.Name], launch[b.Host.Name]}, min(timeout, time.Until(deadline)))
	}
	iso.Result = isolate.Run(ctx, isolate.Options{Hosts: hosts, Run: run, Deadline: deadline, Estimate: res.Duration, Margin: margin})
	iso.Duration = time.Since(isoStart)
	if !o.Deadline.IsZero() && deadline.Equal(o.Deadline) && iso.Result.Incomplete != "" {
		iso.cut = true
		iso.Result.Incomplete = "the run's -deadline ended it: " + iso.Result.Incomplete
	}
	return res, iso, absent
}

// NotLaunchedError is an error of Options.Launch that says the command
// did not run as the engine must run it: it never started (a pod that
// did not start, a refusal of the cluster's), or it ran without what the
// engine holds for it (a node's GPUs, lost mid-run), so its result is
// not taken. The group's test is then not run, not failed, and an
// isolation pair's outcome is not run either: neither says anything
// about the nodes.
type NotLaunchedError struct{ Err error }

func (e *NotLaunchedError) Error() string { return e.Err.Error() }
func (e *NotLaunchedError) Unwrap() error { return e.Err }

// NotLaunched marks err as a launch that never started (NotLaunchedError).
func NotLaunched(err error) error { return &NotLaunchedError{Err: err} }

// runPair runs the group's test on two of its hosts, launched from the
// first, and judges it against the floor for two nodes.
func runPair(ctx context.Context, o Options, exp verify.Expectation, nt verify.NCCLExpectation, groupSize int, a target.Host, names [2]string, timeout time.Duration) isolate.Outcome {
	cmd, err := cmdline.ForHosts(nt.Command, names[:], groupSize, exp.GPUCount)
	if err != nil {
		return isolate.Outcome{Message: err.Error()}
	}
	if timeout <= 0 {
		return isolate.Outcome{Message: "the tier's budget was spent"}
	}
	var res nccltest.Result
	if o.Launch != nil {
		res, err = o.Launch(ctx, a, cmd, timeout)
	} else {
		t, cerr := o.Target.Connect(ctx, a.Host)
		if cerr != nil {
			return isolate.Outcome{Message: fmt.Sprintf("cannot reach %s to launch the pair: %v", a.Host.Name, withoutHost(cerr))}
		}
		res, err = nccltest.RunTest(ctx, t, cmd, timeout)
		t.Close()
	}
	if err != nil && res.Failure == "" {
		if ctx.Err() != nil {
			return isolate.Outcome{Message: "the tier's budget was spent while the pair ran", Duration: res.Duration}
		}
		return isolate.Outcome{Message: withoutHost(err).Error(), Duration: res.Duration}
	}
	r, bw, floor := verify.JudgeMultiNodeRun(nil, exp, nt, res)
	out := isolate.Outcome{Ran: true, Pass: r.Status == verify.StatusPass, BusBW: bw, Floor: floor, Duration: res.Duration}
	if r.Status != verify.StatusPass {
		out.Message = r.Message
	}
	if r.Status == verify.StatusError {
		// Not judged (the floor's size is beyond the sweep): the pair
		// proves nothing either way.
		out.Ran = false
	}
	return out
}

// hostNames reads, in parallel, the name each host of a group calls
// itself (/proc/sys/kernel/hostname under $GPUFORM_ROOT, as the probe
// reads it): the name mpirun's ssh and Slurm (srun -w) know the node by,
// which the inventory's address (an IP, an ssh alias) may not be. A host
// that cannot be reached keeps its inventory name; its own checks report
// it.
// LaunchNames names a group's hosts as a launcher on them knows them (each
// host's own name, read on the host; the spec's name where it cannot be
// read): what bench's multi-node run gives mpirun, as the fleet tier does.
func LaunchNames(ctx context.Context, o Options, group []target.Host) map[string]string {
	return hostNames(ctx, o, group)
}

func hostNames(ctx context.Context, o Options, group []target.Host) map[string]string {
	if o.LaunchNames != nil {
		return o.LaunchNames(ctx, group)
	}
	names := make([]string, len(group))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(o.Target.Parallelism, 1))
	for i, h := range group {
		names[i] = h.Host.Name
		g.Go(func() error {
			t, err := o.Target.Connect(gctx, h.Host)
			if err != nil {
				return nil
			}
			defer t.Close()
			res, err := t.Run(gctx, transport.Command{Script: nodesh.Script(hostNameScript, nil)})
			if n := strings.TrimSpace(string(res.Stdout)); err == nil && res.ExitCode == 0 && validHostname(n) {
				names[i] = n
			}
			return nil
		})
	}
	_ = g.Wait()
	out := map[string]string{}
	for i, h := range group {
		out[h.Host.Name] = names[i]
	}
	return out
}

// hostNameScript prints the host's own name (scripts/host_name.sh).
//
//go:embed scripts/host_name.sh
var hostNameScript string

// validHostname accepts what a launcher's host list can carry: letters,
// digits, dots, dashes and underscores.
func validHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// addIsolationChecks gives every host of an isolated group its
// nccl_isolation.<test> check, and says on the group's nccl.<test> check
// which node the pairs named.
func addIsolationChecks(hosts []report.Host, isolations []groupIsolation) {
	for _, iso := range isolations {
		in := map[string]bool{}
		for _, h := range iso.Hosts {
			in[h] = true
		}
		var named []string
		for _, c := range iso.Culprits {
			named = append(named, c.Host)
		}
		for i := range hosts {
			h := &hosts[i]
			if !in[h.Host] || len(h.Checks) == 1 && h.Checks[0].ID == string(verify.CheckReachable) {
				continue
			}
			for k := range h.Checks {
				c := &h.Checks[k]
				if c.ID == verify.CheckNCCL.Named(iso.Test) && c.Status == verify.StatusFail && len(named) > 0 {
					c.Message += "; pairwise isolation names " + strings.Join(named, ", ") + " (see " + verify.CheckIsolation.Named(iso.Test) + ")"
				}
			}
			c := verify.IsolationCheck(iso.Test, h.Host, iso.Result, iso.groupFailed, iso.stragglersFail)
			if iso.cut && (c.Status == verify.StatusError || c.Status == verify.StatusSkip) {
				// Undecided because the deadline came: not run, held
				// against the host when its group's run failed.
				c.Status, c.Needed = verify.StatusNotRun, iso.groupFailed
			}
			if c.Status == verify.StatusFail && iso.kb != nil {
				// A node the pairs named is drained by health mode with
				// this action, so it must be the catalogue's, not unknown.
				c.Remedy = verify.RemedyForCheck(iso.kb, c.ID)
			}
			h.Checks = append(h.Checks, c)
		}
	}
}

// absentHosts names the hosts of a group that did not take part in its
// multi-node run, each with the reason its check gives: hosts whose name
// (the one the launcher knows, launch) is not in the run's rank lines.
// When the rank lines name no host of the group at all — the output elided
// them, or prints names the group's hosts are not known by — nothing can
// be told apart, and no host is called absent.
func absentHosts(res nccltest.Result, group []target.Host, launch map[string]string) map[string]string {
	if len(res.Runs) == 0 {
		return nil
	}
	var ran []string
	seen := map[string]bool{}
	for _, d := range res.Runs[len(res.Runs)-1].Devices {
		if !seen[d.Host] {
			seen[d.Host] = true
			ran = append(ran, d.Host)
		}
	}
	known := false
	for _, h := range group {
		known = known || seen[launch[h.Host.Name]]
	}
	if !known {
		return nil
	}
	out := map[string]string{}
	for _, h := range group {
		if !seen[launch[h.Host.Name]] {
			out[h.Host.Name] = fmt.Sprintf("the group's multi-node run ran on %s only; %s is not in its rank lines", strings.Join(ran, ", "), launch[h.Host.Name])
		}
	}
	return out
}
