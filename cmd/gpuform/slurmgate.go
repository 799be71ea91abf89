package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/internal/readlimit"
	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/health"
	"github.com/gpuform/gpuform/provision/slurm"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

// The prolog and epilog gate: verify --local -slurm-prolog as Slurm's
// Prolog= and -slurm-epilog as its Epilog=. slurmd runs them as root in a
// bare environment (no PATH; SLURMD_NODENAME, SLURM_JOB_ID, SLURM_CONF
// and SLURM_SCRIPT_CONTEXT set, slurm.conf(5) "Prolog and Epilog
// Scripts"). A prolog that exits non-zero has slurmd drain the node and
// the job requeued (held, unless SchedulerParameters=nohold_on_prolog_fail);
// an epilog that exits non-zero drains the node. So a gate drains the
// node itself first, with health mode's judgement and circuit breaker and
// the failed check as the reason (health.GateReason), then exits 2, and
// Slurm keeps that reason. A node that passes costs no Slurm call at all
// and prints nothing. Anything gpuform cannot do (no SLURMD_NODENAME, a
// broken spec, scontrol failing) exits 1: Slurm drains the node itself,
// "Prolog error", which fails closed.

const (
	// gateXIDWindow is how long a gate listens to NVML for Xids: the
	// kernel log holds every Xid since boot (since the job started, for
	// the epilog), and the job waits on the prolog. A queued event is
	// still read (the agent reads the event set at least once).
	gateXIDWindow = 100 * time.Millisecond
	// gateReserve is what a gate keeps of PrologEpilogTimeout for its
	// Slurm calls (each bounded by slurmHealthTimeout), the breaker's
	// settle and writing the state, beyond the checks' budget.
	gateReserve = slurmHealthTimeout + 5*time.Second
	// gateMinBudget is the least time for the checks a gate accepts: a
	// PrologEpilogTimeout that leaves less would cut every run short and
	// drain every node for a check that was not run.
	gateMinBudget = 5 * time.Second
	// maxSlurmConf bounds the read of slurm.conf for PrologEpilogTimeout.
	maxSlurmConf = 4 << 20
)

// gateFlag is the flag of a gate, for messages.
func gateFlag(g health.Gate) string { return "-slurm-" + string(g) }

// gate is the gate the flags ask for; "" for none.
func (a *verifyArguments) gate() health.Gate {
	switch {
	case a.SlurmProlog:
		return health.GatePrologue
	case a.SlurmEpilog:
		return health.GateEpilogue
	}
	return ""
}

// finishGate checks the gate flags and gives a gate its tier when -tier
// was not given: quick before a job, probe after one.
func (a *verifyArguments) finishGate(fs *pflag.FlagSet, tier *verify.Tier) error {
	modes := 0
	for _, on := range []bool{a.SlurmDrain, a.SlurmProlog, a.SlurmEpilog} {
		if on {
			modes++
		}
	}
	if modes > 1 {
		return fmt.Errorf("-slurm-drain (HealthCheckProgram), -slurm-prolog (Prolog=) and -slurm-epilog (Epilog=) are different modes: give one")
	}
	g := a.gate()
	if g == "" {
		return nil
	}
	if !a.Local {
		return fmt.Errorf("%s works only with --local (it gates the node it runs on, as Slurm's %s)", gateFlag(g), slurmScript(g))
	}
	if !fs.Changed("tier") {
		*tier = verify.TierProbe
		if g == health.GatePrologue {
			*tier = verify.TierQuick
		}
		a.tier = string(*tier)
	}
	return nil
}

// slurmScript is the slurm.conf parameter a gate belongs in.
func slurmScript(g health.Gate) string {
	if g == health.GatePrologue {
		return "Prolog="
	}
	return "Epilog="
}

// gateRun is one gate run on this node for one job.
type gateRun struct {
	gate health.Gate
	// node and job are SLURMD_NODENAME and SLURM_JOB_ID.
	node, job string
	// timeout is slurm.conf's PrologEpilogTimeout (0: not set, Slurm
	// waits indefinitely).
	timeout time.Duration
	// deadline is when the gate must be done (zero: none beyond the
	// tier's budget), PrologEpilogTimeout after it started less a margin.
	deadline time.Time
}

// newGateRun reads what slurmd gives the gate and fits its run into
// Slurm's limits. Every error names the gate's flag and exits 1.
func newGateRun(s Streams, g health.Gate, started time.Time) (*gateRun, error) {
	flag := gateFlag(g)
	r := &gateRun{gate: g, node: s.Getenv("SLURMD_NODENAME"), job: s.Getenv("SLURM_JOB_ID")}
	if r.job == "" {
		r.job = s.Getenv("SLURM_JOBID")
	}
	byHand := "slurmd sets SLURMD_NODENAME and SLURM_JOB_ID for its " + slurmScript(g) + " script; to try the gate by hand, set both"
	switch {
	case r.node == "":
		return nil, fmt.Errorf("%s: SLURMD_NODENAME is not set, so this is not slurmd's %s script and the node to drain is unknown (%s)", flag, strings.TrimSuffix(slurmScript(g), "="), byHand)
	case r.job == "":
		return nil, fmt.Errorf("%s: SLURM_JOB_ID is not set, so this is not slurmd's %s script (%s)", flag, strings.TrimSuffix(slurmScript(g), "="), byHand)
	case !slurm.ValidJobID(r.job):
		return nil, fmt.Errorf("%s: SLURM_JOB_ID=%q is not a Slurm job id", flag, r.job)
	}
	// Slurm 21.08 and later say which script runs: a gate in the wrong
	// slot (the epilog's flag in Prolog=) would judge the wrong thing.
	if c := s.Getenv("SLURM_SCRIPT_CONTEXT"); c != "" && c != string(g)+"_slurmd" {
		return nil, fmt.Errorf("%s: slurmd runs this as %s (SLURM_SCRIPT_CONTEXT), not as its %s script: -slurm-prolog belongs in Prolog=, -slurm-epilog in Epilog=", flag, c, strings.TrimSuffix(slurmScript(g), "="))
	}
	conf := s.Getenv("SLURM_CONF")
	if conf == "" {
		conf = "/etc/slurm/slurm.conf"
	}
	secs, err := prologEpilogTimeout(conf)
	if err != nil && (s.Getenv("SLURM_CONF") != "" || !errors.Is(err, fs.ErrNotExist)) {
		// slurmd always sets SLURM_CONF; a gate tried by hand on a
		// configless node has no slurm.conf at the default path.
		// Without the limit the tier's budget bounds the run, as it
		// does when PrologEpilogTimeout is not set.
		fmt.Fprintf(s.Err, "gpuform: %s: %v; the tier's budget bounds the run.\n", flag, err)
	}
	if secs > 0 {
		r.timeout = time.Duration(secs) * time.Second
		// Finish before slurmd kills the script, so the reason is the
		// gate's and not a timeout's.
		r.deadline = started.Add(r.timeout - time.Second)
	}
	return r, nil
}

// fit gives the run its budget and what a gate reads: a short NVML
// listen, the checks' budget within PrologEpilogTimeout, and for the
// epilog the kernel log since the job started.
func (r *gateRun) fit(ctx context.Context, s Streams, o *runner.Options) error {
	flag := gateFlag(r.gate)
	o.XIDWindow = gateXIDWindow
	if r.timeout > 0 {
		avail := r.timeout - gateReserve
		if avail < gateMinBudget {
			return fmt.Errorf("%s: PrologEpilogTimeout=%d in slurm.conf leaves the checks %s after gpuform's %s for Slurm calls; give it at least %d (the %s tier needs up to %s)",
				flag, int(r.timeout/time.Second), max(avail, 0), gateReserve, int((gateReserve+o.Tier.Budget())/time.Second), o.Tier, o.Tier.Budget())
		}
		if avail < o.Tier.Budget() {
			o.Budget = avail
		}
	}
	if r.gate != health.GateEpilogue {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, slurmHealthTimeout)
	defer cancel()
	at, err := slurm.JobStart(sctx, slurmLocal(s), r.job, time.Local)
	if err != nil {
		// Fail closed: judge more of the log, not less.
		fmt.Fprintf(s.Err, "gpuform: %s: %v; judging the kernel log since boot instead of since the job started.\n", flag, err)
		return nil
	}
	o.KernelSince = at
	return nil
}

// act is the gate's verdict on the report: it judges the report as
// health mode does (health.Decide, the sightings state, confirm before
// drain within the time left) and, when the node must go out of service,
// shows the report (show), drains the node behind the circuit breaker
// with the gate's reason and returns true: the gate fails, exit 2. A node
// that passes returns false at once, with no Slurm call and no output. A
// breaker that holds the drain back returns false too: the job starts,
// said loudly on standard error and in the node's Comment, since a
// non-zero exit would have Slurm drain the node itself.
func (r *gateRun) act(ctx context.Context, s Streams, w io.Writer, doc *report.Document, node *spec.Node, took time.Duration, rerun func(context.Context) *report.Document, show func() error) (bool, error) {
	flag := gateFlag(r.gate)
	p, err := healthPolicy(s, node)
	if err != nil {
		return false, err
	}
	// A state that cannot be used is said on standard error; the
	// decision stands without the earlier sightings.
	dec, _ := decideHealth(s, doc, p)
	if !dec.Drain {
		return false, nil
	}
	if len(dec.Confirm) > 0 && rerun != nil {
		if !r.deadline.IsZero() && time.Until(r.deadline) < p.ConfirmDelay+took+gateReserve {
			fmt.Fprintf(w, "Slurm: node %s: %s failed; no time left within PrologEpilogTimeout=%d to confirm it, so the failure stands.\n", r.node, dec.Confirm[0].ID, int(r.timeout/time.Second))
		} else {
			fmt.Fprintf(w, "Slurm: node %s: %s failed; running the checks again in %s before draining.\n", r.node, dec.Confirm[0].ID, p.ConfirmDelay)
			var runs []string
			var err error
			if dec, runs, err = health.ConfirmAfter(ctx, dec, p, rerun); err != nil {
				return false, fmt.Errorf("%s: %w", flag, err)
			}
			if !dec.Drain {
				// Passing glitches are no reason to keep a job waiting
				// or to fill the log: silent, as a pass.
				return false, nil
			}
			for _, x := range runs {
				fmt.Fprintf(w, "Slurm: node %s: %s.\n", r.node, x)
			}
		}
	}
	if err := show(); err != nil {
		return false, err
	}
	cl := healthClient(s)
	sctx, cancel := context.WithTimeout(ctx, slurmHealthTimeout)
	defer cancel()
	n, err := cl.Show(sctx)
	if err != nil {
		return false, fmt.Errorf("%s: %w", flag, err)
	}
	cl.Name = n.Name
	reason := health.GateReason(r.gate, r.job, dec.Reason)
	if n.OutOfService() {
		// An admin's drain, or an earlier one of gpuform's, is kept as
		// it is; the job still must not run here.
		fmt.Fprintf(w, "Slurm: node %s is out of service already (%s); not drained again. Failed: %s.\n", n.Name, n.Describe(), dec.Reason)
		return true, nil
	}
	err = drainBehindBreaker(sctx, s, w, flag, cl, n, node, reason, p)
	if errors.As(err, new(breakerOpenError)) {
		fmt.Fprintf(s.Err, "gpuform: %s: job %s starts on node %s although it failed: %s.\n", flag, r.job, n.Name, dec.Reason)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// prologEpilogTimeout reads PrologEpilogTimeout from slurm.conf at path
// (0 when it is not set there). Include lines are not followed: a
// PrologEpilogTimeout set in an included file is not seen, and the tier's
// budget bounds the run.
func prologEpilogTimeout(path string) (int, error) {
	b, err := readlimit.ReadRegularFile(path, maxSlurmConf)
	if err != nil {
		return 0, fmt.Errorf("reading PrologEpilogTimeout from %s: %w", path, err)
	}
	return parsePrologEpilogTimeout(b)
}

// parsePrologEpilogTimeout finds PrologEpilogTimeout= in slurm.conf's
// text: keys are case-insensitive, "#" starts a comment, the last
// setting wins.
func parsePrologEpilogTimeout(b []byte) (int, error) {
	secs := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		for _, f := range strings.Fields(text) {
			k, v, ok := strings.Cut(f, "=")
			if !ok || !strings.EqualFold(k, "PrologEpilogTimeout") {
				continue
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return 0, fmt.Errorf("slurm.conf line %d: PrologEpilogTimeout=%s is not a number of seconds", line, v)
			}
			secs = n
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("slurm.conf: %w", err)
	}
	return secs, nil
}

// runGate is verify's work in a gate: the checks, the gate's verdict and,
// only when the node fails (or -out asks for it), the report.
func runGate(ctx context.Context, s Streams, a *verifyArguments, v *verifyView, r *gateRun, targets []target.Host, opts runner.Options, copts connect.Options) error {
	started := time.Now()
	doc := runner.Run(ctx, targets, opts)
	took := time.Since(started)
	shown := false
	show := func() error {
		if shown {
			return nil
		}
		shown = true
		return v.Report(doc, took)
	}
	rerun := func(ctx context.Context) *report.Document {
		ropts := opts
		rc := copts
		rc.MockFaults = a.MockFaults
		ropts.Target = a.Conn.targetOptionsFor(s, rc, false, "verifying")
		return runner.Run(ctx, targets, ropts)
	}
	failed, err := r.act(ctx, s, v.Messages(), doc, targets[0].Node, took, rerun, show)
	if err != nil {
		return err
	}
	if a.OutPath != "" {
		if err := show(); err != nil {
			return err
		}
	}
	if failed {
		return exitError{ExitReport}
	}
	return nil
}
