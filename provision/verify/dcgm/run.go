package dcgm

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
)

// diagScript runs dcgmi diag within a time limit (scripts/dcgmi_diag.sh).
//
//go:embed scripts/dcgmi_diag.sh
var diagScript string

// Result is what one `dcgmi diag` command left behind.
type Result struct {
	// Level is the run level (1 quick ... 4 extended).
	Level int `json:"level"`
	// NotInstalled is true when dcgmi is not on the node: the quick tier
	// then skips DCGM rather than failing.
	NotInstalled bool `json:"not_installed,omitempty"`
	// Diag is the parsed result; nil when nothing could be parsed.
	Diag *Diag `json:"diag,omitempty"`
	// Failure says why the run itself failed (timeout, no host engine,
	// unreadable output); empty otherwise.
	Failure string `json:"failure,omitempty"`
}

// Run runs `dcgmi diag -r level -j` with a hard limit. A non-zero exit is
// not a failure by itself: dcgmi exits non-zero when a test fails, so the
// per-test statuses are what count.
func Run(ctx context.Context, t transport.Transport, level int, timeout time.Duration) (Result, error) {
	res := Result{Level: level}
	if level < 1 || level > 4 {
		return res, fmt.Errorf("dcgm diag level %d: want 1 to 4", level)
	}
	secs := int64((timeout + time.Second - 1) / time.Second)
	if secs < 1 {
		return res, fmt.Errorf("dcgm diag needs a positive timeout")
	}
	script := nodesh.Script(diagScript, []string{strconv.FormatInt(secs, 10), strconv.Itoa(level)})
	rctx, cancel := context.WithTimeout(ctx, timeout+20*time.Second)
	defer cancel()
	out, err := t.Run(rctx, transport.Command{Script: script})
	if err != nil {
		return res, err
	}
	switch out.ExitCode {
	case nodesh.ExitNotFound:
		res.NotInstalled = true
		return res, nil
	case nodesh.ExitTimedOut, nodesh.ExitTimedOutKilled:
		res.Failure = fmt.Sprintf("dcgmi diag -r %d did not finish within %s", level, timeout)
		return res, nil
	}
	d, perr := Parse(out.Stdout)
	if perr != nil {
		msg := strings.TrimSpace(string(out.Stderr) + " " + string(out.Stdout))
		if len(msg) > 300 {
			msg = msg[:300]
		}
		res.Failure = fmt.Sprintf("dcgmi diag exited %d without a readable result: %s", out.ExitCode, msg)
		return res, nil
	}
	res.Diag = d
	if d.RuntimeError != "" {
		res.Failure = "DCGM: " + d.RuntimeError
	}
	return res, nil
}
