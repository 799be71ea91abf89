// Package slurm is the engine that lets Slurm carry verify to the nodes:
// it allocates the spec's hosts as Slurm nodes (salloc --no-shell), or
// uses the nodes of a job the run is scoped to (-slurm-job, or the
// SLURM_JOB_ID of the allocation it runs in); sends this gpuform binary
// and a bundle of the spec to every node with sbcast (no shared
// filesystem is assumed); runs verify --local on every node at once as
// one srun step, one task per node; reads each node's report back from
// the step's standard output (framed, bounded in size and by the step's
// time limit); and merges them into the report every view renders. The
// controller runs a fixed number of Slurm commands whatever the number of
// nodes; only reading the reports grows with it.
//
// Hosts are named as Slurm names them: a host's Slurm node is rollout {
// slurm_node_name } applied to it, else its short name, and the report
// gives each node's result under the spec's host name.
package slurm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/engine"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

// Options configure the engine.
type Options struct {
	// Job scopes the run to that job's nodes (-slurm-job, or
	// SLURM_JOB_ID inside an allocation); "" allocates the spec's hosts.
	Job string
	// Partition is salloc's -p for the allocation ("" is the default
	// partition).
	Partition string
	// StartTimeout bounds how long the allocation may wait to start
	// (salloc --immediate); zero is DefaultStartTimeout.
	StartTimeout time.Duration
	// Deadline, when set, ends the whole run: what has not finished by
	// then is reported not run, never passed.
	Deadline time.Time
	// Binary is the gpuform binary sbcast sends to the nodes.
	Binary string
	// Bundle makes the spec bundle for the nodes the run verifies (the
	// CLI knows the spec's files and variables).
	Bundle func(nodes map[string]BundleNode) (*Bundle, error)
	// Env is added to every Slurm client's environment (SLURM_CONF).
	Env []string
	// ClientDir is where salloc, srun, sbcast, … are ("" looks them up
	// on $PATH).
	ClientDir string
	// NodeDir is where sbcast puts the binary and the bundle on each
	// node and the step runs ("" is /tmp).
	NodeDir string
	// ReportLimit bounds one node's report (DefaultReportLimit when 0).
	ReportLimit int
	// Messages, when set, gets what the run did in Slurm (the job it
	// allocated, job nodes the spec does not list).
	Messages io.Writer
}

// DefaultStartTimeout is how long an allocation may wait to start.
const DefaultStartTimeout = 5 * time.Minute

// stepMargin is how much longer than the tier's budget the node step may
// run: sbcast's copy, the binary's start, the report's trip back.
const stepMargin = time.Minute

// Engine runs verify through Slurm.
type Engine struct {
	o Options
	c client
}

var _ engine.Engine = (*Engine)(nil)

// New returns the engine.
func New(o Options) *Engine {
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.NodeDir == "" {
		o.NodeDir = "/tmp"
	}
	return &Engine{o: o, c: client{env: o.Env, bin: o.ClientDir}}
}

// Name is "slurm".
func (*Engine) Name() string { return engine.Slurm }

// NodeName is the Slurm node name of a spec host: rollout {
// slurm_node_name } applied to it, else its short name.
func NodeName(tg target.Host) (string, error) {
	tmpl := "{short}"
	if tg.Node != nil && tg.Node.Rollout != nil && tg.Node.Rollout.SlurmNodeName.V != "" {
		tmpl = tg.Node.Rollout.SlurmNodeName.V
	}
	return spec.SlurmNodeName(tmpl, tg.Host.Name)
}

// member is one spec host the run verifies on a Slurm node.
type member struct {
	tg   target.Host
	node string
}

// Verify runs verify --local on every host's Slurm node and merges the
// reports.
func (e *Engine) Verify(ctx context.Context, targets []target.Host, ro runner.Options) (*report.Document, error) {
	checkedAt := time.Now().UTC()
	if !e.o.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, e.o.Deadline)
		defer cancel()
	}
	job, members, hostErr, release, err := e.place(ctx, targets, verifyTimeLimit(targets, ro))
	if err != nil {
		return nil, err
	}
	defer release()
	reports := map[string]report.Host{}
	var mn runner.MultiNode
	if len(members) > 0 {
		reports, mn = e.runStep(ctx, job, members, ro)
	}

	// The report keeps the spec's order; a job-scoped run holds only the
	// job's hosts.
	inRun := map[string]bool{}
	var runTargets []target.Host
	for _, m := range members {
		inRun[m.tg.Host.Name] = true
	}
	var hosts []report.Host
	for _, tg := range targets {
		name := tg.Host.Name
		if err, ok := hostErr[name]; ok {
			hosts = append(hosts, report.UnreachableHost(name, err, 0))
			runTargets = append(runTargets, tg)
			continue
		}
		if !inRun[name] {
			continue
		}
		runTargets = append(runTargets, tg)
		hosts = append(hosts, reports[name])
	}
	mn.AddChecks(hosts)
	doc := runner.Merge(runTargets, hosts, ro, checkedAt)
	mn.AddIsolation(doc)
	return doc, nil
}

// place names the targets' Slurm nodes and gets the job to run in: the
// scoped job's nodes, or an allocation of the spec's hosts (release
// cancels it), limit being the longest the run can hold it (the
// allocation's time limit; a job the run is scoped to keeps its own).
// Hosts that cannot take part have their error in hostErr.
func (e *Engine) place(ctx context.Context, targets []target.Host, limit time.Duration) (job string, members []member, hostErr map[string]error, release func(), err error) {
	release = func() {}
	var placed []engine.Placed
	placed, hostErr = engine.Place(targets, engine.Naming{NodeName: NodeName, Scheduler: "Slurm", Attr: "slurm_node_name", Fix: "rollout { slurm_node_name }"})
	for _, p := range placed {
		members = append(members, member{tg: p.Target, node: p.Node})
	}

	job = e.o.Job
	if job != "" {
		if members, err = e.scopeToJob(ctx, job, members, hostErr); err != nil {
			return "", nil, nil, release, err
		}
	} else {
		members = e.knownNodes(ctx, members, hostErr)
		if len(members) > 0 {
			id, err := e.allocate(ctx, nodeNames(members), limit)
			if err != nil {
				return "", nil, nil, release, err
			}
			job = id
			release = func() { e.release(id) }
		}
	}
	return job, members, hostErr, release, nil
}

func nodeNames(ms []member) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.node
	}
	return out
}

// scopeToJob keeps the members whose node the job holds, tells of the
// job's nodes the spec does not list, and refuses a job that holds none
// of the spec's hosts or is not running.
func (e *Engine) scopeToJob(ctx context.Context, job string, members []member, hostErr map[string]error) ([]member, error) {
	if !jobIDPattern.MatchString(job) {
		return nil, fmt.Errorf("-slurm-job %q is not a Slurm job id", job)
	}
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := e.c.run(qctx, "squeue", "-h", "-j", job, "-o", "%T|%N")
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", job, err)
	}
	state, list, _ := strings.Cut(strings.TrimSpace(out), "|")
	if state == "" {
		return nil, fmt.Errorf("job %s is not in Slurm's queue (squeue lists no such job): it ended, or the id is wrong", job)
	}
	if state != "RUNNING" {
		return nil, fmt.Errorf("job %s is %s, not RUNNING: its nodes are not allocated yet", job, state)
	}
	nodes, err := e.hostnames(qctx, list)
	if err != nil {
		return nil, err
	}
	in := map[string]bool{}
	for _, n := range nodes {
		in[n] = true
	}
	var kept []member
	listed := map[string]bool{}
	for _, m := range members {
		if in[m.node] {
			kept = append(kept, m)
			listed[m.node] = true
		}
	}
	for name := range hostErr {
		// A host whose node name is unusable cannot be in the job.
		delete(hostErr, name)
	}
	var extra []string
	for _, n := range nodes {
		if !listed[n] {
			extra = append(extra, n)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("job %s runs on %s, none of them a host of the spec (Slurm node names are rollout { slurm_node_name } of each host, else its short name)", job, strings.Join(nodes, ","))
	}
	if len(extra) > 0 && e.o.Messages != nil {
		fmt.Fprintf(e.o.Messages, "Slurm: job %s's node(s) %s are no host of the spec; not verified.\n", job, strings.Join(extra, ","))
	}
	return kept, nil
}

// hostnames expands a Slurm hostlist as Slurm does (scontrol show
// hostnames).
func (e *Engine) hostnames(ctx context.Context, list string) ([]string, error) {
	if list == "" || list == "(null)" {
		return nil, nil
	}
	out, err := e.c.run(ctx, "scontrol", "show", "hostnames", list)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// unusableStates are the node states an allocation cannot get (asking
// for such a node would only wait until the start timeout), by sinfo's
// compact name (%t), each in words and with Slurm's own name, so the
// error says what Slurm says in scontrol show node.
var unusableStates = map[string]struct{ words, slurm string }{
	"down":     {"down", "DOWN"},
	"drain":    {"drained", "DRAINED"},
	"drained":  {"drained", "DRAINED"},
	"drng":     {"draining", "DRAINING"},
	"draining": {"draining", "DRAINING"},
	"fail":     {"failed", "FAIL"},
	"failg":    {"failing", "FAILING"},
	"failing":  {"failing", "FAILING"},
	"maint":    {"in maintenance", "MAINT"},
	"futr":     {"not yet in service", "FUTURE"},
	"future":   {"not yet in service", "FUTURE"},
	"unk":      {"in an unknown state", "UNKNOWN"},
	"inval":    {"invalid", "INVAL"},
	"npc":      {"held for network performance counters", "PERFCTRS"},
	"boot":     {"booting", "BOOT"},
}

// knownNodes keeps the members that are Slurm nodes an allocation can
// get; every other host gets its error, naming the node.
func (e *Engine) knownNodes(ctx context.Context, members []member, hostErr map[string]error) []member {
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := e.c.run(qctx, "sinfo", "-h", "-N", "-o", "%N|%t")
	if err != nil {
		for _, m := range members {
			hostErr[m.tg.Host.Name] = fmt.Errorf("cannot list Slurm's nodes to find %s: %w", m.node, err)
		}
		return nil
	}
	state := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		n, s, ok := strings.Cut(strings.TrimSpace(l), "|")
		if ok {
			state[n] = strings.TrimRight(s, "*~#!%$@^-")
		}
	}
	var kept []member
	for _, m := range members {
		s, ok := state[m.node]
		switch {
		case !ok:
			hostErr[m.tg.Host.Name] = fmt.Errorf("spec host %s: Slurm has no node %s (sinfo lists %d nodes); set rollout { slurm_node_name } if the node is named otherwise", m.tg.Host.Name, m.node, len(state))
		case unusableStates[s].slurm != "":
			u := unusableStates[s]
			hostErr[m.tg.Host.Name] = fmt.Errorf("the Slurm node %s is %s (%s): an allocation cannot get it; not verified", m.node, u.words, u.slurm)
		default:
			kept = append(kept, m)
		}
	}
	return kept
}

var grantedJob = lazyre.New(`job allocation ([0-9]+)`)

// jobIDPattern is a Slurm job id, or an array job's element (123_4).
var jobIDPattern = lazyre.New(`^[0-9]+(_[0-9]+)?$`)

// allocate gets the nodes in a job of their own (salloc --no-shell) and
// returns its id. The job's time limit (-t) is limit, or the -deadline
// plus the cleanup and a margin when that is sooner: the job ends by then
// even if gpuform does not live to cancel it.
func (e *Engine) allocate(ctx context.Context, nodes []string, limit time.Duration) (string, error) {
	secs := int(e.o.StartTimeout.Round(time.Second) / time.Second)
	if !e.o.Deadline.IsZero() {
		secs = min(secs, int(time.Until(e.o.Deadline)/time.Second))
	}
	if secs < 1 {
		return "", fmt.Errorf("the -deadline leaves no time to allocate %s", strings.Join(nodes, ","))
	}
	args := []string{"--no-shell", "--immediate=" + fmt.Sprint(secs), "-J", "gpuform-verify", "-N", fmt.Sprint(len(nodes)), "-w", strings.Join(nodes, ",")}
	if e.o.Partition != "" {
		args = append(args, "-p", e.o.Partition)
	}
	if !e.o.Deadline.IsZero() {
		limit = min(limit, time.Until(e.o.Deadline)+cleanupTimeout+limitMargin)
	}
	mins := allocationMinutes(limit)
	args = append(args, "-t", fmt.Sprint(mins))
	actx, cancel := context.WithTimeout(ctx, time.Duration(secs+30)*time.Second)
	defer cancel()
	cmd := e.c.command(actx, "salloc", args...)
	var out capped
	out.limit = 64 << 10
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	m := grantedJob.FindStringSubmatch(out.String())
	if err == nil && strings.Contains(out.String(), "Granted job allocation") && m != nil {
		if e.o.Messages != nil {
			fmt.Fprintf(e.o.Messages, "Slurm: job %s holds %s for this run (time limit %d min).\n", m[1], strings.Join(nodes, ","), mins)
		}
		return m[1], nil
	}
	if m != nil {
		// Pending, then given up: the job must not stay queued.
		e.release(m[1])
	}
	msg := lastLines(out.String(), 3)
	switch {
	case e.o.Partition != "" && strings.Contains(strings.ToLower(msg), "partition"):
		return "", fmt.Errorf("-slurm-partition %s: Slurm refused the allocation of %s: %s", e.o.Partition, strings.Join(nodes, ","), msg)
	case strings.Contains(strings.ToLower(msg), "time limit"):
		return "", fmt.Errorf("slurmctld refused the allocation of %s with a time limit of %d min (-t, the longest this run can take): %s; use a -slurm-partition whose MaxTime allows it, or a shorter -deadline", strings.Join(nodes, ","), mins, msg)
	case strings.Contains(msg, "mmediate") || strings.Contains(msg, "busy") || strings.Contains(msg, "timed out") || errors.Is(actx.Err(), context.DeadlineExceeded):
		return "", fmt.Errorf("the allocation of %s did not start within %ds (-slurm-start-timeout): %s", strings.Join(nodes, ","), secs, msg)
	}
	return "", fmt.Errorf("slurmctld refused the allocation of %s: %s", strings.Join(nodes, ","), msg)
}

// send puts the binary and the bundle on every node of the job with
// sbcast (no shared filesystem assumed), under one random name per run:
// base, and the two files' paths on the nodes. sbcastErr is the first
// copy that failed; the run goes on to report every node as not run.
func (e *Engine) send(ctx context.Context, job, bundlePath string) (base, destBin, destBundle string, sbcastErr error) {
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	base = filepath.Join(e.o.NodeDir, "gpuform-job"+job+"-"+hex.EncodeToString(suffix))
	destBin, destBundle = base+"-gpuform", base+"-bundle.json"
	for _, f := range [][2]string{{e.o.Binary, destBin}, {bundlePath, destBundle}} {
		if err := e.sbcast(ctx, job, f[0], f[1]); err != nil {
			return base, destBin, destBundle, fmt.Errorf("sbcast of %s failed: %w", filepath.Base(f[0]), err)
		}
	}
	return base, destBin, destBundle, nil
}

// sbcast copies one file to every node of the job, bounded in time.
func (e *Engine) sbcast(ctx context.Context, job, from, to string) error {
	sctx, cancel := context.WithTimeout(ctx, sbcastTimeout)
	defer cancel()
	_, err := e.c.run(sctx, "sbcast", "--jobid="+job, "--force", from, to)
	return err
}

// release ends the job the run allocated, whatever happened to the run.
func (e *Engine) release(job string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_, _ = e.c.run(ctx, "scancel", job)
}

// runStep sends the binary and the bundle, runs the node step and returns
// each member's report by spec host.
func (e *Engine) runStep(ctx context.Context, job string, members []member, ro runner.Options) (out map[string]report.Host, mn runner.MultiNode) {
	out = map[string]report.Host{}
	failAll := func(err error) map[string]report.Host {
		for _, m := range members {
			out[m.tg.Host.Name] = report.UnreachableHost(m.tg.Host.Name, err, 0)
		}
		return out
	}
	bnodes := map[string]BundleNode{}
	for _, m := range members {
		bnodes[m.node] = BundleNode{Host: m.tg.Host.Name, Node: m.tg.Node.Name}
	}
	b, err := e.bundle(bnodes)
	if err != nil {
		return failAll(fmt.Errorf("cannot bundle the spec for the nodes: %w", err)), mn
	}
	local, err := os.MkdirTemp("", "gpuform-slurm")
	if err != nil {
		return failAll(err), mn
	}
	defer os.RemoveAll(local)
	bundlePath := filepath.Join(local, "bundle.json")
	if err := b.Write(bundlePath); err != nil {
		return failAll(err), mn
	}
	_, destBin, destBundle, sbcastErr := e.send(ctx, job, bundlePath)
	nodes := strings.Join(nodeNames(members), ",")
	defer e.cleanup(job, nodes, len(members), destBin, destBundle)

	budget := ro.Budget
	if budget == 0 {
		budget = ro.Tier.Budget()
	}
	sctx, cancel := context.WithTimeout(ctx, budget+stepMargin)
	defer cancel()
	started := time.Now()
	reports, problems, stepErr, beforeCut := e.step(sctx, ctx, job, nodes, len(members), destBin, "verify", "--local", "-engine-node", destBundle)
	took := time.Since(started)
	// cut: the -deadline ended the step; a node that had not reported
	// by then is not run, not failed and never passed.
	cut := !e.o.Deadline.IsZero() && ctx.Err() != nil
	for _, m := range members {
		name := m.tg.Host.Name
		if rep, ok := reports[m.node]; ok {
			if rep.Error != "" {
				out[name] = report.UnreachableHost(name, fmt.Errorf("verify --local could not run on Slurm node %s: %s", m.node, rep.Error), took)
				continue
			}
			if hs := rep.HostReports(); len(hs) == 1 {
				h := hs[0]
				h.Host = name
				out[name] = h
				continue
			}
		}
		f := stepFailure{job: job, stderr: stepErr, beforeCut: beforeCut, cut: cut, sbcastErr: sbcastErr, problems: problems, nodes: len(members)}
		msg, notRun := f.why(m.node)
		if notRun {
			out[name] = notFinished(name, m.node, took)
			continue
		}
		out[name] = report.UnreachableHost(name, msg, took)
	}

	// The fleet tier: each group's multi-node tests, and the isolation
	// of a failing one, as srun steps inside the allocation (a round's
	// pairs at once), after the nodes' own checks, so a -deadline that
	// ends them leaves those checks reported; each host's multi-node
	// checks, left not run by its own step, are then judged on the
	// group's results (not run where there is none).
	if ro.Tier.Includes(verify.TierFleet) && sbcastErr == nil && ctx.Err() == nil {
		mn = e.multiNode(ctx, job, members, ro, destBin, destBundle)
		for _, m := range members {
			if h, ok := out[m.tg.Host.Name]; ok {
				mn.JudgeHost(m.tg, &h, ro)
				out[m.tg.Host.Name] = h
			}
		}
	}
	return out, mn
}

// stepFailure is what a node step left for the nodes it heard nothing
// usable from.
type stepFailure struct {
	job               string
	stderr, beforeCut string
	cut               bool
	sbcastErr         error
	problems          map[string]string
	nodes             int
}

// why says why node sent no usable report, naming it and srun's and
// sbcast's words; notRun is true when the -deadline cut it before it
// finished and nothing else went wrong.
func (f stepFailure) why(node string) (err error, notRun bool) {
	named := linesNaming(f.stderr, node)
	if f.cut {
		// srun's lines after the deadline are of the tasks it killed
		// for it: only what it said before counts against the node.
		named = linesNaming(f.beforeCut, node)
	}
	if f.cut && f.problems[node] == "" && named == "" {
		return nil, true
	}
	why := f.problems[node]
	if why == "" {
		why = "it sent no report"
	}
	var notes []string
	if f.sbcastErr != nil {
		notes = append(notes, f.sbcastErr.Error())
	}
	if named != "" {
		notes = append(notes, named)
	} else if f.stderr != "" && f.nodes == 1 {
		notes = append(notes, lastLines(f.stderr, 3))
	}
	msg := fmt.Sprintf("Slurm node %s (job %s): %s", node, f.job, why)
	if len(notes) > 0 {
		msg += " (" + strings.Join(notes, "; ") + ")"
	}
	return errors.New(msg), false
}

// bundle is the CLI's bundle of the spec for nodes.
func (e *Engine) bundle(nodes map[string]BundleNode) (*Bundle, error) {
	if e.o.Bundle == nil {
		return nil, errors.New("no spec bundle (Options.Bundle)")
	}
	return e.o.Bundle(nodes)
}

// multiNode runs the fleet tier's multi-node tests and isolation pairs as
// srun steps: each command is launched, as over SSH from a group's first
// host, from its node, by the node's own gpuform (verify --local
// -engine-command), which runs it there exactly as the SSH engine runs it
// over its connection and sends the result back as a report.
func (e *Engine) multiNode(ctx context.Context, job string, members []member, ro runner.Options, bin, bundle string) runner.MultiNode {
	node := map[string]string{}
	targets := make([]target.Host, len(members))
	for i, m := range members {
		node[m.tg.Host.Name] = m.node
		targets[i] = m.tg
	}
	ro.LaunchNames = func(_ context.Context, group []target.Host) map[string]string {
		out := map[string]string{}
		for _, h := range group {
			out[h.Host.Name] = node[h.Host.Name]
		}
		return out
	}
	ro.Launch = e.launcher(job, node, bin, bundle)
	if !e.o.Deadline.IsZero() {
		ro.Deadline = e.o.Deadline
	}
	// The commands run on the Slurm nodes, never on this machine: the
	// refusal of a sim:// or local:// host's nccl_test here
	// (runner.RefuseLocalNCCL) is the CLI's, made before the run.
	ro.AllowLocal = true
	return runner.RunMultiNode(ctx, targets, ro)
}

// launcher runs a multi-node test's (or an isolation pair's) command from
// the Slurm node of host from (node: spec host to Slurm node) as an srun
// step there: the node's own gpuform (verify --local -engine-command)
// runs it exactly as the SSH engine runs it over its connection and
// sends the result back as a report.
func (e *Engine) launcher(job string, node map[string]string, bin, bundle string) func(ctx context.Context, from target.Host, command string, timeout time.Duration) (nccltest.Result, error) {
	return func(ctx context.Context, from target.Host, command string, timeout time.Duration) (nccltest.Result, error) {
		n := node[from.Host.Name]
		lctx, cancel := context.WithTimeout(ctx, timeout+stepMargin)
		defer cancel()
		args := append(e.stepArgs(job, n, 1), bin, "verify", "--local", "-engine-node", bundle, "-engine-command", command, "-engine-timeout", timeout.String())
		cmd := e.c.command(lctx, "srun", args...)
		var errOut capped
		errOut.limit = 64 << 10
		cmd.Stderr = &errOut
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nccltest.Result{Command: command}, err
		}
		if err := cmd.Start(); err != nil {
			return nccltest.Result{Command: command}, fmt.Errorf("srun: %w", err)
		}
		reports, problems := ReadNodeReports(stdout, e.o.ReportLimit)
		_ = cmd.Wait()
		rep, ok := reports[n]
		switch {
		case ok && rep.NCCL != nil:
			return *rep.NCCL, nil
		case ok && rep.Error != "":
			return nccltest.Result{Command: command}, fmt.Errorf("the Slurm node %s could not launch the test: %s", n, rep.Error)
		case ctx.Err() != nil:
			return nccltest.Result{Command: command}, ctx.Err()
		}
		why := problems[n]
		if why == "" {
			why = "it sent no result"
		}
		if l := lastLines(errOut.String(), 3); l != "" {
			why += " (" + l + ")"
		}
		return nccltest.Result{Command: command}, fmt.Errorf("the Slurm node %s (job %s): %s", n, job, why)
	}
}

// notFinished is a host whose checks the -deadline cut: not run, and
// held against the host (a gate passes only what it checked).
func notFinished(host, node string, took time.Duration) report.Host {
	return report.Host{Host: host, Duration: took, Checks: []verify.CheckResult{{
		ID: string(verify.CheckReachable), Status: verify.StatusNotRun, Needed: true, Expected: "checks finished", Observed: "not finished",
		Message: fmt.Sprintf("the -deadline ended before Slurm node %s's checks finished; not run, not passed", node),
	}}}
}

// linesNaming returns srun's error lines that name node.
func linesNaming(stderr, node string) string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, node) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	if len(out) > 3 {
		out = out[len(out)-3:]
	}
	return strings.Join(out, "; ")
}

// step runs verify --local on every node as one srun step, one task per
// node, and reads the reports from its output. It returns srun's standard
// error whole and as it stood when run (the whole run's context) ended.
func (e *Engine) step(ctx, run context.Context, job, nodes string, n int, bin string, nodeArgs ...string) (map[string]NodeReport, map[string]string, string, string) {
	args := append(append(e.stepArgs(job, nodes, n), bin), nodeArgs...)
	cmd := e.c.command(ctx, "srun", args...)
	var errOut capped
	errOut.limit = 256 << 10
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err.Error(), err.Error()
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Sprintf("srun: %v", err), ""
	}
	var beforeCut string
	var once sync.Once
	mark := func() { once.Do(func() { beforeCut = errOut.String() }) }
	stop := context.AfterFunc(run, mark)
	reports, problems := ReadNodeReports(stdout, e.o.ReportLimit)
	werr := cmd.Wait()
	stop()
	mark()
	msg := errOut.String()
	if werr != nil && msg == "" {
		msg = "srun: " + werr.Error()
	}
	return reports, problems, msg, beforeCut
}

// stepArgs are srun's arguments for a step of one task on each of n nodes
// of the job: --overlap, so it runs beside a step the job already has (a
// batch script calling gpuform), and in NodeDir, which exists on every
// node where the job's working directory may not.
func (e *Engine) stepArgs(job, nodes string, n int) []string {
	return []string{"--jobid=" + job, "-N", fmt.Sprint(n), "-n", fmt.Sprint(n), "--ntasks-per-node=1", "-w", nodes,
		"--overlap", "--kill-on-bad-exit=0", "--chdir=" + e.o.NodeDir, "-J", "gpuform-verify"}
}

// cleanup removes what sbcast put on the nodes, one more step.
func (e *Engine) cleanup(job, nodes string, n int, paths ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	args := append(e.stepArgs(job, nodes, n), append([]string{"rm", "-f", "--"}, paths...)...)
	_, _ = e.c.run(ctx, "srun", args...)
}
