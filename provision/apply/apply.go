package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/fleet"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/slurm"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// Status is where a host stands after apply.
type Status string

const (
	// Succeeded means every resource converged (or nothing had to change).
	Succeeded Status = "succeeded"
	// RebootPending means everything is configured and converged, and the
	// host needs a reboot that the rollout does not allow apply to do.
	RebootPending Status = "reboot pending"
	// Rebooted means apply rebooted the host and it came back converged.
	Rebooted Status = "rebooted"
	// Failed means a step failed, a resource did not converge, or the host
	// could not be reached or locked.
	Failed Status = "failed"
	// Skipped means apply never started on the host (failure budget
	// exhausted, or interrupted).
	Skipped Status = "skipped"
)

// HostResult is one host's outcome.
type HostResult struct {
	// Host is the inventory name.
	Host string `json:"host"`
	// Node is the node block.
	Node string `json:"node"`
	// Batch is the 1-based rollout batch the host was in.
	Batch int `json:"batch"`
	// Status is the outcome.
	Status Status `json:"status"`
	// Error says why the host failed or was skipped.
	Error string `json:"error,omitempty"`
	// Resources counts the resources whose every step ran, in the plan's
	// units ("Plan: 6 to add, 3 to change"). A field added to the 2.x
	// format.
	Resources ResourceCounts `json:"resources"`
	// StepsRun counts the steps that ran to completion.
	StepsRun int `json:"steps_run"`
	// StepsPlanned counts the steps the plan had for the host.
	StepsPlanned int `json:"steps_planned"`
	// FailedStep is the description of the step that failed.
	FailedStep string `json:"failed_step,omitempty"`
	// NotConverged are resources that still differ after the steps.
	NotConverged []string `json:"not_converged,omitempty"`
	// Slurm says what apply did with the host in Slurm (drain = "slurm"):
	// "drained and resumed", "stays drained: apply failed", "left alone: …".
	Slurm string `json:"slurm,omitempty"`
	// Elapsed is how long apply spent on the host (the recap's time
	// column); zero for a host it never started.
	Elapsed time.Duration `json:"-"`
}

// ResourceCounts are resources by what apply did to them, the units of
// the plan's summary line.
type ResourceCounts struct {
	Added     int `json:"added"`
	Changed   int `json:"changed"`
	Destroyed int `json:"destroyed"`
}

func (c *ResourceCounts) count(a resource.Action) {
	switch a {
	case resource.Create:
		c.Added++
	case resource.Update:
		c.Changed++
	case resource.Delete:
		c.Destroyed++
	}
}

func (c *ResourceCounts) add(o ResourceCounts) {
	c.Added += o.Added
	c.Changed += o.Changed
	c.Destroyed += o.Destroyed
}

// OK reports whether the host counts as converged for the exit code.
func (r HostResult) OK() bool {
	return r.Status == Succeeded || r.Status == RebootPending || r.Status == Rebooted
}

// Report is the outcome of an apply.
type Report struct {
	// FormatVersion is jsonformat.Version.
	FormatVersion string `json:"format_version"`
	// Hosts are the per-host results, in plan order.
	Hosts []HostResult `json:"hosts"`
	// Stopped says why apply stopped starting hosts early; "" when it did not.
	Stopped string `json:"stopped,omitempty"`
}

// Converged reports whether every host converged: apply's exit code is 0
// exactly then.
func (r *Report) Converged() bool {
	for _, h := range r.Hosts {
		if !h.OK() {
			return false
		}
	}
	return true
}

// Count returns how many hosts have status s.
func (r *Report) Count(s Status) int {
	n := 0
	for _, h := range r.Hosts {
		if h.Status == s {
			n++
		}
	}
	return n
}

// Event is a progress report for one host.
type Event struct {
	// Host is the host.
	Host string
	// Message says what happens ("step 3/12: install …", "succeeded").
	Message string
	// Done is set on the host's last event, its outcome.
	Done bool
	// Status is the host's outcome on its Done event.
	Status Status
}

// Options configure Apply.
type Options struct {
	// Target is how hosts are reached, the same options plan probed them
	// with: Connect, Parallelism (how many hosts of a batch run at once)
	// and ProbeTimeout (each probe after the steps). Its Progress is not
	// used; Progress below tells each step.
	Target target.Options
	// KB is the knowledge base the re-diff after the steps reads (package
	// names, toolkit features), the one the plan was made with.
	KB *kb.KB
	// Progress, when set, receives an Event as each host moves on.
	Progress func(Event)
	// Owner names this apply in the host lock; default "USER@HOST pid N".
	Owner string
	// Now returns the current time (tests pin it); default time.Now.
	Now func() time.Time
	// RebootTimeout bounds waiting for a rebooted host (default 15m).
	RebootTimeout time.Duration
	// RebootPoll is the interval between reconnect attempts (default 10s).
	RebootPoll time.Duration
	// DrainTimeout bounds waiting for a drained host's jobs; zero means
	// rollout { drain_timeout }, else 2h.
	DrainTimeout time.Duration
	// DrainPoll is the interval between Slurm state reads; zero means
	// rollout { drain_poll }, else 30s.
	DrainPoll time.Duration
	// StepTimeout bounds each step; a step still running then is stopped
	// and fails. Zero means the node's rollout { step_timeout }, else
	// DefaultStepTimeout.
	StepTimeout time.Duration
	// StepTimeoutSetting names where StepTimeout came from, for the
	// timeout message (default "-step-timeout or rollout { step_timeout }").
	StepTimeoutSetting string
	// LockTimeout is how long to wait for a host lock held by another
	// apply (or by a step of one that is gone) before failing the host;
	// zero fails at once, as Terraform's -lock-timeout=0s does.
	LockTimeout time.Duration
	// LockPoll is the interval between attempts while waiting for a held
	// lock (default 1s).
	LockPoll time.Duration
	// Stage, when set, runs on each host with steps, under the host lock
	// and after the checks, before the first step (apply -bundle copies
	// and verifies the bundle's repository there). Its error fails the
	// host with nothing changed; the environment it returns is given to
	// every step of the host.
	Stage func(ctx context.Context, tr transport.Transport, hp *plan.HostPlan) (map[string]string, error)

	// stepEnv is what Stage returned for the host being applied (opts is
	// each host's copy).
	stepEnv map[string]string
}

// DefaultStepTimeout bounds one apply step when neither the command line
// nor the spec says otherwise. A driver install from a slow mirror
// (several hundred MB, then DKMS building the module) takes minutes; half
// an hour means wedged.
const DefaultStepTimeout = 30 * time.Minute

func (o *Options) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Owner == "" {
		o.Owner = DefaultOwner()
	}
	if o.RebootTimeout == 0 {
		o.RebootTimeout = 15 * time.Minute
	}
	if o.RebootPoll == 0 {
		o.RebootPoll = 10 * time.Second
	}
	if o.StepTimeoutSetting == "" {
		o.StepTimeoutSetting = "-step-timeout or rollout { step_timeout }"
	}
	if o.LockPoll == 0 {
		o.LockPoll = time.Second
	}
}

// stepTimeout is the limit for the steps of a node: the option, else the
// rollout's step_timeout, else the default.
func (o *Options) stepTimeout(nr plan.NodeRollout) time.Duration {
	if o.StepTimeout > 0 {
		return o.StepTimeout
	}
	if nr.StepTimeout.D > 0 {
		return nr.StepTimeout.D
	}
	return DefaultStepTimeout
}

// DefaultOwner describes this process for the host lock.
func DefaultOwner() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host + " pid " + strconv.Itoa(os.Getpid())
}

// Apply executes p on its hosts, node by node in rollout batches. cfg is
// the spec p was made from; apply re-diffs each host against it after the
// steps to check convergence. When ctx ends (Ctrl-C), no new host starts
// and hosts in flight stop after their current step.
func Apply(ctx context.Context, cfg *spec.Config, p *plan.Plan, opts Options) *Report {
	opts.defaults()
	rep := &Report{FormatVersion: jsonformat.Version}
	nodes := map[string]*spec.Node{}
	for _, n := range cfg.Nodes {
		nodes[n.Name] = n
	}
	results := map[string]*HostResult{}
	for _, h := range p.Hosts {
		results[h.Host] = &HostResult{Host: h.Host, Node: h.Node, Status: Skipped, StepsPlanned: stepCount(h)}
	}
	for _, nr := range p.Nodes {
		// A rollout in NVLink domains batches whole domains and counts
		// its failure budget in domains (docs/guide/rack-scale-nvlink.md);
		// otherwise each host is a unit of its own.
		units, what := rolloutUnits(nr)
		batch := nr.Batch
		if batch <= 0 || batch > len(units) {
			batch = len(units)
		}
		failures := 0
		for start, num := 0, 1; start < len(units); start, num = start+batch, num+1 {
			end := min(start+batch, len(units))
			var hosts []string
			for _, u := range units[start:end] {
				hosts = append(hosts, u.hosts...)
			}
			for _, h := range hosts {
				results[h].Batch = num
			}
			if ctx.Err() != nil {
				for _, h := range hosts {
					results[h].Error = "not started: apply was interrupted"
				}
				if rep.Stopped == "" {
					rep.Stopped = "interrupted: no new hosts were started"
				}
				continue
			}
			if nr.MaxFailures >= 0 && failures > nr.MaxFailures {
				for _, h := range hosts {
					results[h].Error = fmt.Sprintf("not started: node %q exceeded its failure budget (%d%s failed, max_failures = %d)", nr.Name, failures, map[bool]string{true: " " + what}[what != "hosts"], nr.MaxFailures)
				}
				if rep.Stopped == "" {
					rep.Stopped = fmt.Sprintf("node %q: %d %s failed, more than max_failures = %d; batch %d and later were not started", nr.Name, failures, what, nr.MaxFailures, num)
				}
				continue
			}
			runBatch(ctx, p, hosts, nodes, nr, results, opts)
			for _, u := range units[start:end] {
				// A host left alone (drained by an admin) was not
				// changed: it does not spend the failure budget. A
				// domain fails when any of its hosts did.
				if slices.ContainsFunc(u.hosts, func(h string) bool { return !results[h].OK() && results[h].Status != Skipped }) {
					failures++
				}
			}
		}
	}
	for _, h := range p.Hosts {
		rep.Hosts = append(rep.Hosts, *results[h.Host])
	}
	return rep
}

// rolloutUnit is what one step of a rollout's batch counts: one host, or
// the hosts of one NVLink domain.
type rolloutUnit struct {
	hosts []string
}

// rolloutUnits splits a node's hosts into the units its rollout counts,
// and names them for the failure budget's messages.
func rolloutUnits(nr plan.NodeRollout) ([]rolloutUnit, string) {
	if nr.Unit == spec.RolloutUnitNVLinkDomain {
		units := make([]rolloutUnit, 0, len(nr.Domains))
		for _, d := range nr.Domains {
			units = append(units, rolloutUnit{hosts: d.Hosts})
		}
		return units, "NVLink domains"
	}
	units := make([]rolloutUnit, 0, len(nr.Hosts))
	for _, h := range nr.Hosts {
		units = append(units, rolloutUnit{hosts: []string{h}})
	}
	return units, "hosts"
}

func stepCount(h *plan.HostPlan) int {
	n := 0
	for _, rc := range h.ResourceChanges {
		n += len(rc.Steps)
	}
	return n
}

func runBatch(ctx context.Context, p *plan.Plan, hosts []string, nodes map[string]*spec.Node, nr plan.NodeRollout, results map[string]*HostResult, opts Options) {
	batch := make([]target.Host, 0, len(hosts))
	for _, name := range hosts {
		hp := p.Host(name)
		batch = append(batch, target.Host{Host: hp.Target.Host, Node: nodes[hp.Node]})
	}
	o := opts.Target
	o.Progress = nil
	var mu sync.Mutex
	errs := target.Each(ctx, batch, o, func(ctx context.Context, h target.Host) error {
		name := h.Host.Name
		start := opts.Now()
		r := applyHost(ctx, p.Host(name), h.Node, nr, opts)
		r.Elapsed = opts.Now().Sub(start)
		mu.Lock()
		r.Batch = results[name].Batch
		*results[name] = r
		mu.Unlock()
		if opts.Progress != nil {
			opts.Progress(Event{Host: name, Message: string(r.Status) + errSuffix(r.Error), Done: true, Status: r.Status})
		}
		return nil
	})
	for name, err := range errs {
		var ns *fleet.NotStartedError
		if errors.As(err, &ns) {
			results[name].Error = "not started: apply was interrupted"
		}
	}
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

func emit(opts Options, host, msg string) {
	if opts.Progress != nil {
		opts.Progress(Event{Host: host, Message: msg})
	}
}

// applyHost converges one host.
func applyHost(ctx context.Context, hp *plan.HostPlan, node *spec.Node, nr plan.NodeRollout, opts Options) HostResult {
	r := HostResult{Host: hp.Host, Node: hp.Node, StepsPlanned: stepCount(hp)}
	fail := func(format string, args ...any) HostResult {
		r.Status = Failed
		r.Error = fmt.Sprintf(format, args...)
		return r
	}
	if hp.Error != "" {
		return fail("%s", hp.Error)
	}
	if node == nil {
		return fail("node %q is not in the spec", hp.Node)
	}
	if hp.Slurm != nil && hp.Slurm.Action == plan.SlurmResumeStale && !hp.HasChanges() {
		return resumeStale(ctx, hp, nr, r, opts)
	}
	if !hp.HasChanges() && !hp.RebootPending {
		// Nothing to do: no connection, no lock, no probe beyond the plan's.
		r.Status = Succeeded
		return r
	}
	if r.StepsPlanned == 0 && hp.RebootPending && nr.Reboot == spec.RebootNever {
		r.Status = RebootPending
		return r
	}
	emit(opts, hp.Host, "connecting")
	tr, err := opts.Target.Connect(ctx, hp.Target.Host)
	if err != nil {
		return fail("%v", err)
	}
	defer func() { tr.Close() }()
	// The lock is held from the first step until the reboot is issued (or
	// apply is done with the host): another apply must neither run steps
	// between ours and our re-probe, nor be rebooted in the middle of its
	// own steps. A reboot ends the holder with the connection.
	lock, err := acquireWaiting(ctx, tr, hp.Host, opts)
	if err != nil {
		return fail("%v", err)
	}
	defer lock.Release() //nolint:errcheck // a holder that will not exit ends with the connection (Release says so)
	// The plan's step checks again, before anything is changed or
	// drained: a registry that went away since the plan fails the host
	// here, not at its pull step with the driver already replaced.
	if plan.HasChecks(hp) {
		emit(opts, hp.Host, "checking before the first step")
		cctx, cancel := transport.WithTimeout(ctx, opts.Target.ProbeLimit(hp.Target.Host), "the checks before apply", plan.CheckSetting)
		_, err := plan.RunChecks(cctx, tr, hp)
		cancel()
		if err != nil {
			return fail("preflight, before the first step (nothing was changed): %s", target.ErrorText(err))
		}
	}
	if opts.Stage != nil && r.StepsPlanned > 0 {
		emit(opts, hp.Host, "staging the bundle")
		env, err := opts.Stage(ctx, tr, hp)
		if err != nil {
			return fail("staging, before the first step (nothing was changed): %s", target.ErrorText(err))
		}
		opts.stepEnv = env
	}
	if nr.Drain == spec.DrainSlurm {
		return applySlurm(ctx, tr, lock, hp, node, nr, r, opts)
	}
	return applyDrained(ctx, tr, lock, hp, node, nr, r, opts, slurm.Client{})
}

// reconnect returns tr when it still answers, else a new connection (after
// a reboot the old one is gone); tr is returned when neither works, so the
// caller's command fails with its error.
func reconnect(ctx context.Context, tr transport.Transport, hp *plan.HostPlan, opts Options) transport.Transport {
	if res, err := tr.Run(ctx, transport.Command{Script: "true"}); err == nil && res.ExitCode == 0 {
		return tr
	}
	if t2, err := opts.Target.Connect(ctx, hp.Target.Host); err == nil {
		return t2
	}
	return tr
}

// applyDrained runs the steps, checks convergence and reboots when needed
// and allowed: everything apply does to a host once it may be changed. sc
// is the host's Slurm client when it is drained (zero otherwise), for a
// reboot through Slurm.
func applyDrained(ctx context.Context, tr transport.Transport, lock *Lock, hp *plan.HostPlan, node *spec.Node, nr plan.NodeRollout, r HostResult, opts Options, sc slurm.Client) HostResult {
	fail := func(format string, args ...any) HostResult {
		r.Status = Failed
		r.Error = fmt.Sprintf(format, args...)
		return r
	}
	if r.StepsPlanned > 0 {
		stepErr := runSteps(ctx, tr, lock, hp, &r, opts.stepTimeout(nr), opts)
		if stepErr != nil {
			r.Status = Failed
			r.Error = stepErr.Error()
			return r
		}
	}
	// Re-probe: a step that exited 0 without doing its job must not pass.
	emit(opts, hp.Host, "re-probing")
	pctx, cancel := transport.WithTimeout(context.WithoutCancel(ctx), opts.Target.ProbeLimit(hp.Target.Host), "the re-probe after the steps", "-probe-timeout")
	f, err := target.ProbeOver(pctx, tr, hp.Target.Host)
	cancel()
	if err != nil {
		return fail("re-probe after apply: %v", err)
	}
	changes, _, err := plan.Diff(opts.KB, node, f)
	if err != nil {
		return fail("re-plan after apply: %v", err)
	}
	pending := false
	for _, c := range changes {
		if c.Action != resource.NoOp {
			r.NotConverged = append(r.NotConverged, c.Resource)
		}
		pending = pending || c.RebootPending
	}
	if len(r.NotConverged) > 0 {
		return fail("not converged after apply: %s", strings.Join(r.NotConverged, ", "))
	}
	// A change the plan marked "reboot required" needs the reboot even
	// when the re-probe cannot show it pending: kernel arguments whose
	// drop-in was removed stay on the running command line until a boot.
	for _, rc := range hp.ResourceChanges {
		pending = pending || rc.RebootRequired && len(rc.Steps) > 0
	}
	if !pending {
		r.Status = Succeeded
		return r
	}
	if nr.Reboot == spec.RebootSlurm && sc.Tr != nil {
		// Slurm reboots the node once it is idle and resumes it when
		// slurmd has registered again, so no job lands on it before.
		if err := sc.Reboot(context.WithoutCancel(ctx), slurm.Reason("reboot after apply by "+opts.Owner)); err != nil {
			return fail("%v", err)
		}
		emit(opts, hp.Host, "Slurm reboots it (scontrol reboot ASAP nextstate=RESUME)")
		r.Status = RebootPending
		r.Slurm = "reboot through Slurm: scontrol reboot ASAP nextstate=RESUME, Slurm returns it to service"
		return r
	}
	if nr.Reboot != spec.RebootAllow {
		r.Status = RebootPending
		return r
	}
	if ctx.Err() != nil {
		r.Status = RebootPending
		r.Error = "reboot not started: apply was interrupted"
		return r
	}
	return reboot(ctx, tr, hp, node, r, opts)
}

// runSteps runs the host's steps in plan order, stopping at the first
// failure. Each step runs to its end even after ctx ends, because a step is
// the unit that leaves the host consistent; ctx is checked between steps.
// A step still running after limit is stopped (its whole process group on
// the host) and fails. Every step holds the step lock in its own shell
// (Lock.Step), so an apply that dies mid-step leaves the host locked
// until the step ends.
func runSteps(ctx context.Context, tr transport.Transport, lock *Lock, hp *plan.HostPlan, r *HostResult, limit time.Duration, opts Options) error {
	i := 0
	for _, rc := range hp.ResourceChanges {
		for _, st := range rc.Steps {
			i++
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted after %d of %d steps; next was %s: %s", r.StepsRun, r.StepsPlanned, rc.Resource, st.Description)
			}
			emit(opts, hp.Host, fmt.Sprintf("step %d/%d: %s: %s", i, r.StepsPlanned, rc.Resource, st.Description))
			cmd := transport.Command{Script: st.Script, Become: st.Become, Env: opts.stepEnv}
			if st.Input != "" {
				cmd.Stdin = strings.NewReader(st.Input)
			}
			name := fmt.Sprintf("step %d/%d (%s: %s)", i, r.StepsPlanned, rc.Resource, st.Description)
			sctx, cancel := transport.WithTimeout(context.WithoutCancel(ctx), limit, "the step", opts.StepTimeoutSetting)
			res, err := tr.Run(sctx, lock.Step(cmd, name))
			cancel()
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit status %d: %s", res.ExitCode, hp.Redact(failureExcerpt(string(res.Stderr), string(res.Stdout), 3)))
			}
			if err != nil {
				r.FailedStep = rc.Resource + ": " + st.Description
				return fmt.Errorf("step %d/%d (%s: %s) failed: %w", i, r.StepsPlanned, rc.Resource, st.Description, err)
			}
			r.StepsRun++
		}
		// Every step of the resource ran: it counts as added, changed
		// or destroyed, as the plan counted it.
		r.Resources.count(rc.Action)
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	// The excerpt is the host's output: it must not carry escapes or a
	// CR that rewrite the report it is printed in.
	return transport.HostText(strings.Join(lines, " / "))
}

// reboot restarts the host and waits until it answers with every resource
// converged and nothing pending.
func reboot(ctx context.Context, tr transport.Transport, hp *plan.HostPlan, node *spec.Node, r HostResult, opts Options) HostResult {
	emit(opts, hp.Host, "rebooting")
	// reboot returns before the host goes down and sshd answers a moment
	// longer; the kernel's boot id tells the old boot from the new one.
	bootBefore := bootID(ctx, tr)
	// The connection may drop before reboot reports back; that is success.
	res, err := tr.Run(context.WithoutCancel(ctx), transport.Command{Script: nodesh.Script(rebootScript, nil), Become: true})
	if err == nil && res.ExitCode != 0 {
		r.Status = Failed
		r.Error = fmt.Sprintf("reboot: exit status %d: %s", res.ExitCode, lastLines(string(res.Stderr), 2))
		return r
	}
	tr.Close()
	deadline := time.Now().Add(opts.RebootTimeout)
	var last error
	for first := true; time.Now().Before(deadline); first = false {
		if !first {
			select {
			case <-time.After(opts.RebootPoll):
			case <-ctx.Done():
				r.Status = Failed
				r.Error = "interrupted while waiting for the host to come back from its reboot"
				return r
			}
		}
		t2, err := opts.Target.Connect(ctx, hp.Target.Host)
		if err != nil {
			last = err
			continue
		}
		if bootBefore != "" && bootID(ctx, t2) == bootBefore {
			t2.Close()
			last = errors.New("the host has not restarted yet (same boot id)")
			continue
		}
		pctx, cancel := transport.WithTimeout(ctx, opts.Target.ProbeLimit(hp.Target.Host), "the probe after the reboot", "-probe-timeout")
		f, err := target.ProbeOver(pctx, t2, hp.Target.Host)
		cancel()
		t2.Close()
		if err != nil {
			last = err
			continue
		}
		changes, _, err := plan.Diff(opts.KB, node, f)
		if err != nil {
			last = err
			continue
		}
		ok := true
		for _, c := range changes {
			if c.Action != resource.NoOp || c.RebootPending {
				ok = false
			}
		}
		if ok {
			r.Status = Rebooted
			return r
		}
		last = errors.New("the host is back but still differs from the spec")
	}
	r.Status = Failed
	r.Error = fmt.Sprintf("host did not come back converged within %s after reboot: %v", opts.RebootTimeout, last)
	return r
}

// bootID reads the kernel's random boot id, "" when it cannot be read.
func bootID(ctx context.Context, tr transport.Transport) string {
	res, err := tr.Run(ctx, transport.Command{Script: nodesh.Script(bootIDScript, nil)})
	if err != nil || res.ExitCode != 0 {
		return ""
	}
	return strings.TrimSpace(string(res.Stdout))
}
