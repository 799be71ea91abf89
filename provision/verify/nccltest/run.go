package nccltest

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/cmdline"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
)

// Result is what one nccl-tests command left behind on a node.
type Result struct {
	// Command is the command line as configured.
	Command string `json:"command"`
	// ExitCode is the command's exit status (124 when the timeout fired).
	ExitCode int `json:"exit_code"`
	// Duration is how long the command ran.
	Duration time.Duration `json:"duration_ns"`
	// Runs are the runs parsed from standard output.
	Runs []Run `json:"runs,omitempty"`
	// Failure is set when the command itself failed: binary missing,
	// timeout/hang, non-zero exit. Empty when it ran to completion.
	Failure string `json:"failure,omitempty"`
	// NotInstalled is true when the program the command names is not on
	// the node's PATH (the test could not run at all, as opposed to a
	// program it runs being missing).
	NotInstalled bool `json:"not_installed,omitempty"`
	// StderrTail is the last lines of standard error, for the report.
	StderrTail string `json:"stderr_tail,omitempty"`
	// StderrCauses are the NCCL WARN, CUDA/NCCL error and nccl-tests
	// failure lines of standard error (NCCL_DEBUG_FILE=/dev/stderr,
	// launchers that merge ranks' output there), every one.
	StderrCauses []string `json:"stderr_causes,omitempty"`
	// NotRun, on the result a host of a node group is given, says why that
	// host did not take part in the group's multi-node run (its name is
	// not in the run's rank lines): the run says nothing about it, so its
	// check is "not run", never a pass.
	NotRun string `json:"not_run,omitempty"`
}

// Judge judges a Result: a command failure fails it, and otherwise every
// parsed run must pass Judge. An output without any run fails.
func (res Result) Judge(floor float64) Verdict {
	var v Verdict
	if len(res.Runs) == 0 {
		v = Verdict{Floor: floor, Reasons: []string{"no nccl-tests output"}}
	} else {
		// The last run is the one a configured command produced; earlier
		// runs only appear when the command itself loops.
		v = Judge(res.Runs[len(res.Runs)-1], floor)
		for _, r := range res.Runs[:len(res.Runs)-1] {
			if pv := Judge(r, 0); !pv.Pass {
				v.Reasons = append(v.Reasons, pv.Reasons...)
			}
		}
	}
	if res.Failure != "" {
		v.Reasons = append([]string{res.Failure}, v.Reasons...)
	}
	// The causes NCCL printed lead the message, before the exit status.
	var causes []string
	for _, r := range res.Runs {
		causes = append(causes, r.Causes...)
		causes = append(causes, r.Failures...)
	}
	causes = append(causes, res.StderrCauses...)
	v.Causes = nil
	v.lead(causes)
	v.Pass = len(v.Reasons) == 0
	return v
}

// Exit statuses with a meaning for RunTest: timeout(1)'s when the limit
// fired (then its KILL), and the shell's for a command not found.
const (
	exitTimeout       = nodesh.ExitTimedOut
	exitTimeoutKilled = nodesh.ExitTimedOutKilled
	exitNotFound      = nodesh.ExitNotFound
)

// runScript runs an nccl-tests command line under timeout(1)
// (scripts/nccl_test.sh).
//
//go:embed scripts/nccl_test.sh
var runScript string

// RunTest runs an nccl-tests command line on the node behind t with a hard
// wall-clock limit and parses its output. The command line is split into
// words without any shell expansion and every word is quoted, so nothing in
// it reaches the remote shell unquoted; environment assignments in front
// (NCCL_ALGO=RING all_reduce_perf …) are passed through env(1).
//
// The limit is enforced twice: timeout(1) on the node kills the test (and
// mpirun's children through its process group) even if the connection
// drops, and ctx is cancelled a little later so a wedged connection cannot
// hold the controller. A missing binary, a timeout, a non-zero exit or NCCL
// failure lines make a Result whose Judge fails; the error return is kept
// for transport failures and malformed command lines.
func RunTest(ctx context.Context, t transport.Transport, cmd string, timeout time.Duration) (Result, error) {
	res := Result{Command: cmd}
	words, err := cmdline.Split(cmd)
	if err != nil {
		return res, err
	}
	env, argv := cmdline.SplitEnv(words)
	if len(argv) == 0 {
		return res, fmt.Errorf("nccl test command %q names no program", cmd)
	}
	if timeout <= 0 {
		return res, errors.New("nccl test needs a positive timeout")
	}
	secs := int64((timeout + time.Second - 1) / time.Second)
	script := nodesh.Script(runScript, append([]string{strconv.FormatInt(secs, 10), argv[0]}, append(env, argv...)...))

	rctx, cancel := context.WithTimeout(ctx, timeout+20*time.Second)
	defer cancel()
	start := time.Now()
	out, err := t.Run(rctx, transport.Command{Script: script})
	res.Duration = time.Since(start)
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			res.Failure = fmt.Sprintf("no answer within %s: the test hung and the connection did not end it", timeout+20*time.Second)
			return res, nil
		}
		return res, err
	}
	res.ExitCode = out.ExitCode
	res.StderrTail = tail(out.Stderr, 10)
	res.StderrCauses = Causes(out.Stderr)
	res.Runs, _ = Parse(bytes.NewReader(out.Stdout)) // reading a byte slice cannot fail
	switch out.ExitCode {
	case 0:
	case exitTimeout, exitTimeoutKilled:
		res.Failure = fmt.Sprintf("timed out after %s (the test hung or is too slow for its limit)", timeout)
	case exitNotFound:
		res.Failure = fmt.Sprintf("%s not found on the node (is nccl-tests installed and on PATH?)", argv[0])
		res.NotInstalled = true
		if !bytes.Contains(out.Stderr, []byte("gpuform: "+argv[0]+": command not found")) {
			// The binary passed command -v: what was missing is
			// timeout(1) or env(1), or a program the test itself runs.
			res.NotInstalled = false
			res.Failure = fmt.Sprintf("exit status 127: a command was not found (timeout(1) and env(1) from coreutils must be on the node's PATH): %s", tail(out.Stderr, 1))
		}
	default:
		// nccl-tests exit codes (src/common.h testResult_t).
		meaning := map[int]string{1: "internal error", 2: "CUDA error", 3: "NCCL error", 4: "timeout", 5: "not implemented", 6: "invalid usage", 7: "out-of-bounds values or bandwidth check failed"}[out.ExitCode]
		if meaning == "" {
			meaning = "failed"
		}
		res.Failure = fmt.Sprintf("exit status %d (%s)", out.ExitCode, meaning)
	}
	return res, nil
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
