package drill

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/cmdline"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// CheckpointDrill is the name -fault gives the checkpoint-restore drill:
// the spec's workload (bench { command }) started, killed with SIGKILL
// after bench { checkpoint { kill_after } } as a node loss kills it, and
// restarted with the checkpoint's resume_command, which must resume from
// a checkpoint (a step above 0) at the throughput it had before, within
// max_throughput_loss.
const CheckpointDrill = "checkpoint-restore"

// SimulatedWorkload is the simulated nodes' toy training workload
// (provision/sim's standins/gpuform-sim-train): it writes its checkpoint
// under the simulated root and nowhere else.
const SimulatedWorkload = "gpuform-sim-train"

// CheckpointSummary says what the checkpoint-restore drill does, for -list.
const CheckpointSummary = "the spec's workload (bench { command }) killed mid-run with SIGKILL, resumed from its checkpoint (bench { checkpoint }), its throughput compared"

// CheckpointTarget is one host the checkpoint drill runs the workload on.
type CheckpointTarget struct {
	// Node is the node block whose bench block gives the workload.
	Node string
	// Host is the host: one of the spec's real hosts, or, when Profile
	// is set, the name of the fresh simulated node the drill makes.
	Host spec.Host
	// Profile, when set, is the simulated profile of a fresh node made
	// in the drill's state directory (never the spec's own nodes).
	Profile string
	// Bench is the node block's bench block; its Checkpoint is set.
	Bench *spec.Bench
	// GPUs is the GPU count for {gpus}.
	GPUs int
}

// OpenFunc opens a transport to a checkpoint target; stateDir is where
// a simulated target's root was made ("" for a real host).
type OpenFunc func(ctx context.Context, tg CheckpointTarget, stateDir string) (transport.Transport, error)

// CheckpointResult is the checkpoint drill's outcome on one host.
type CheckpointResult struct {
	// Node and Host are the target's; Simulated says the host is a
	// fresh simulated node.
	Node      string `json:"node"`
	Host      string `json:"host"`
	Simulated bool   `json:"simulated"`
	// GPUs is the {gpus} both runs used.
	GPUs int `json:"gpus"`
	// KilledAfter is how long the first run ran before it was killed.
	KilledAfter time.Duration `json:"killed_after_ns"`
	// CheckpointDir is the spec's checkpoint { dir }; CheckpointWritten
	// says a file there was written by the killed run (false when no dir
	// is given: not checked).
	CheckpointDir     string `json:"checkpoint_dir,omitempty"`
	CheckpointWritten bool   `json:"checkpoint_written"`
	// Detected is true when the resumed run said it resumed from a
	// checkpoint, at ResumedStep, above 0.
	Detected    bool  `json:"detected"`
	ResumedStep int64 `json:"resumed_step"`
	// ThroughputBefore is the last throughput the first run printed
	// before the kill; ThroughputAfter the resumed run's last.
	ThroughputBefore float64 `json:"throughput_before"`
	ThroughputAfter  float64 `json:"throughput_after"`
	// ThroughputLoss is 1 - after/before (negative: faster after);
	// MaxThroughputLoss the spec's bound.
	ThroughputLoss    float64 `json:"throughput_loss"`
	MaxThroughputLoss float64 `json:"max_throughput_loss"`
	// ResumeTook is how long the resumed run ran.
	ResumeTook time.Duration `json:"resume_took_ns"`
	// Passed is true when the run was killed mid-run, resumed from a
	// checkpoint and kept its throughput within the bound.
	Passed bool `json:"passed"`
	// Why says, when not passed, what went wrong.
	Why string `json:"why,omitempty"`
	// Error says why the drill could not run on the host; it fails the
	// drill.
	Error string `json:"error,omitempty"`
}

// checkpointFindLimit bounds the look for the killed run's checkpoint
// file (runBounded adds its minute): a checkpoint directory of many
// files on a parallel file system takes a while, a hung mount for ever.
const checkpointFindLimit = time.Minute

// killedSlack is how much sooner than kill_after the node's timeout may
// end a run that it killed: clocks of the node and of gpuform differ.
const killedSlack = 200 * time.Millisecond

// runCheckpoint runs the checkpoint drill over t: marks the time, runs
// the bench command until kill_after kills it, checks the checkpoint
// directory, runs the resume command and judges its output.
func runCheckpoint(ctx context.Context, t transport.Transport, tg CheckpointTarget, now func() time.Time) CheckpointResult {
	b, c := tg.Bench, tg.Bench.Checkpoint
	r := CheckpointResult{Node: tg.Node, Host: tg.Host.Name, Simulated: tg.Profile != "", GPUs: tg.GPUs, CheckpointDir: c.Dir.V, MaxThroughputLoss: DefaultLoss(c)}
	killAfter := spec.DefaultKillAfter
	if c.KillAfter.Set {
		killAfter = c.KillAfter.V
	}
	resumeFor := spec.DefaultResumeTimeout
	if c.Timeout.Set {
		resumeFor = c.Timeout.V
	}
	first, err := nodeCommand(b.Command.V, tg.GPUs, killAfter)
	if err != nil {
		r.Error = "bench command: " + err.Error()
		return r
	}
	resume, err := nodeCommand(c.ResumeCommand.V, tg.GPUs, resumeFor)
	if err != nil {
		r.Error = "resume command: " + err.Error()
		return r
	}
	env := map[string]string{"CUDA_VISIBLE_DEVICES": visible(tg.GPUs)}

	var marker string
	if c.Dir.Set {
		res, err := runBounded(ctx, t, 0, transport.Command{Script: "exec mktemp \"${TMPDIR:-/tmp}/gpuform-drill.XXXXXX\"\n"})
		if err != nil || res.ExitCode != 0 {
			r.Error = fmt.Sprintf("marking the start time (mktemp): %s", lastLine(err, res))
			return r
		}
		marker = strings.TrimSpace(string(res.Stdout))
		if !safePath(marker) {
			r.Error = fmt.Sprintf("mktemp printed %q, not a plain path", transport.HostText(marker))
			return r
		}
		// The marker goes whatever happens; a failure to remove it
		// leaves an empty file in the node's temporary directory.
		defer func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_, _ = t.Run(ctx, transport.Command{Script: "exec rm -f " + transport.Quote(marker) + "\n"})
		}()
	}

	// The first run: killed by the node's timeout, with SIGKILL, process
	// group and all (timeout(1) runs the command in a group of its own).
	start := now()
	res, err := runBounded(ctx, t, killAfter, transport.Command{Script: first, Env: env})
	r.KilledAfter = now().Sub(start)
	if err != nil {
		r.Error = "the workload's run: " + err.Error()
		return r
	}
	switch {
	case res.ExitCode == 0:
		r.Why = fmt.Sprintf("the workload ended (exit status 0) after %s, before kill_after (%s) killed it: make kill_after shorter or the run longer", round(r.KilledAfter), killAfter)
		return r
	case r.KilledAfter < killAfter-killedSlack:
		r.Why = fmt.Sprintf("the workload failed (exit status %d) after %s, before kill_after (%s): %s", res.ExitCode, round(r.KilledAfter), killAfter, lastLine(nil, res))
		return r
	case !killedBySignal(res):
		// gpuform's clock includes the connection's latency: a run
		// that ended on its own just before kill_after looks as long.
		r.Why = fmt.Sprintf("the workload exited with status %d after %s, not killed by kill_after's SIGKILL (%s): %s", res.ExitCode, round(r.KilledAfter), killAfter, lastLine(nil, res))
		return r
	}
	before, ok := lastNumber(b, output(res))
	if !ok {
		r.Why = fmt.Sprintf("the workload printed no throughput matching %q in the %s before the kill (last line: %s)", b.Throughput.V, killAfter, lastLine(nil, res))
		return r
	}
	r.ThroughputBefore = before

	if c.Dir.Set {
		// -H: a checkpoint directory that is a link (to the parallel
		// file system it lives on) is looked in, not taken for the link.
		script := "find -H \"${GPUFORM_ROOT:-}\"" + transport.Quote(c.Dir.V) + " -type f -newer " + transport.Quote(marker) + " 2>/dev/null | head -n 1\n"
		res, err := runBounded(ctx, t, checkpointFindLimit, transport.Command{Script: script})
		if err != nil {
			r.Error = "looking for the checkpoint: " + err.Error()
			return r
		}
		r.CheckpointWritten = strings.TrimSpace(string(res.Stdout)) != ""
		if !r.CheckpointWritten {
			r.Why = fmt.Sprintf("the killed run wrote no file in %s in %s: no checkpoint to resume from", c.Dir.V, killAfter)
			return r
		}
	}

	start = now()
	res, err = runBounded(ctx, t, resumeFor, transport.Command{Script: resume, Env: env})
	r.ResumeTook = now().Sub(start)
	if err != nil {
		r.Error = "the resumed run: " + err.Error()
		return r
	}
	out := output(res)
	killed := killedBySignal(res) && r.ResumeTook >= resumeFor-killedSlack
	if res.ExitCode != 0 && !killed {
		r.Why = fmt.Sprintf("the resumed run failed, exit status %d: %s", res.ExitCode, lastLine(nil, res))
		return r
	}
	m := c.ResumedRE.FindSubmatch(out)
	if m == nil {
		r.Why = fmt.Sprintf("the resumed run printed no line matching resumed %q: it did not say it resumed from a checkpoint (last line: %s)", c.Resumed.V, lastLine(nil, res))
		return r
	}
	step, err := strconv.ParseInt(string(m[1]), 10, 64)
	if err != nil {
		r.Why = fmt.Sprintf("resumed %q captured %q, not a step number", c.Resumed.V, transport.HostText(string(m[1])))
		return r
	}
	r.ResumedStep = step
	if step <= 0 {
		r.Why = fmt.Sprintf("the resumed run started over from step %d, not from the killed run's checkpoint", step)
		return r
	}
	r.Detected = true
	after, ok := lastNumber(b, out)
	if !ok {
		r.Why = fmt.Sprintf("the resumed run printed no throughput matching %q (last line: %s)", b.Throughput.V, lastLine(nil, res))
		return r
	}
	r.ThroughputAfter = after
	r.ThroughputLoss = 1 - after/before
	if r.ThroughputLoss > r.MaxThroughputLoss+1e-9 {
		r.Why = fmt.Sprintf("throughput after the resume %g is %.1f%% below the %g before the kill (max_throughput_loss %.1f%%)", after, 100*r.ThroughputLoss, before, 100*r.MaxThroughputLoss)
		return r
	}
	r.Passed = true
	return r
}

// killedBySignal reports whether a run ended as timeout -s KILL ends
// it: killed by a signal (a transport's -1; timeout(1) signals its own
// process group, itself included) or 128+SIGKILL as a shell reports it.
func killedBySignal(res transport.Result) bool {
	return res.ExitCode == -1 || res.ExitCode == nodesh.ExitTimedOutKilled
}

// DefaultLoss is the checkpoint's max_throughput_loss, else the default.
func DefaultLoss(c *spec.BenchCheckpoint) float64 {
	if c.MaxThroughputLoss.Set {
		return c.MaxThroughputLoss.V
	}
	return spec.DefaultMaxThroughputLoss
}

// nodeCommand is the script that runs a bench or resume command at gpus
// GPUs under timeout(1), SIGKILL after limit.
func nodeCommand(command string, gpus int, limit time.Duration) (string, error) {
	words, err := cmdline.Split(strings.ReplaceAll(command, spec.BenchPlaceholder, strconv.Itoa(gpus)))
	if err != nil {
		return "", err
	}
	if len(words) == 0 {
		return "", fmt.Errorf("%q is empty", command)
	}
	env, argv := cmdline.SplitEnv(words)
	if len(argv) == 0 {
		return "", fmt.Errorf("%q sets variables and runs nothing", command)
	}
	secs := strconv.FormatFloat(math.Ceil(limit.Seconds()*10)/10, 'f', -1, 64)
	q := make([]string, 0, len(words))
	for _, w := range append(env, argv...) {
		q = append(q, transport.Quote(w))
	}
	return "exec timeout -s KILL " + secs + "s env " + strings.Join(q, " ") + "\n", nil
}

// runBounded runs cmd, whose node-side timeout(1) is limit (0 for a
// command of the drill's own, such as mktemp or find), with a local limit
// a minute past it, in case the node's does not end the run (a transport
// that hangs, a hung mount).
func runBounded(ctx context.Context, t transport.Transport, limit time.Duration, cmd transport.Command) (transport.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, limit+time.Minute)
	defer cancel()
	return t.Run(ctx, cmd)
}

func output(res transport.Result) []byte {
	return append(append([]byte(nil), res.Stdout...), res.Stderr...)
}

// lastNumber reads the throughput: the last match of bench's pattern, a
// finite number above 0.
func lastNumber(b *spec.Bench, out []byte) (float64, bool) {
	ms := b.ThroughputRE.FindAllSubmatch(out, -1)
	if len(ms) == 0 {
		return 0, false
	}
	// ParseFloat reads "inf" and "NaN" too, which a workload prints
	// after a step of no measured time; neither is a throughput, and an
	// infinite one after the resume would pass any bound.
	v, err := strconv.ParseFloat(string(ms[len(ms)-1][1]), 64)
	return v, err == nil && v > 0 && !math.IsInf(v, 0)
}

func visible(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return strings.Join(ids, ",")
}

func lastLine(err error, res transport.Result) string {
	if err != nil {
		return err.Error()
	}
	for _, b := range [][]byte{res.Stderr, res.Stdout} {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
			return transport.HostText(l)
		}
	}
	return "no output"
}

func safePath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
		return false
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-", r)) {
			return false
		}
	}
	return true
}
