package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clientOutputLimit bounds what one Slurm client's standard output and
// error may hold in memory (sinfo of a large cluster is a line a node).
const clientOutputLimit = 16 << 20

// client runs the Slurm commands (salloc, sinfo, squeue, scontrol,
// sbcast, srun, scancel) on this machine, each bounded in time by its
// context and in output by clientOutputLimit.
type client struct {
	// env is added to the environment of every command (SLURM_CONF).
	env []string
	// bin is where the clients are looked up ("" is $PATH).
	bin string
}

func (c client) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	path := name
	if c.bin != "" {
		path = c.bin + "/" + name
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), c.env...)
	// srun forwards a SIGTERM to its tasks and ends the step; a kill of
	// srun alone would leave the step running.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// run runs a client to completion and returns its standard output; an
// error carries its standard error.
func (c client) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := c.command(ctx, name, args...)
	var out, errOut capped
	out.limit, errOut.limit = clientOutputLimit, 64<<10
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err == nil && out.over {
		err = fmt.Errorf("its output passed %d bytes", clientOutputLimit)
	}
	if err != nil {
		return out.String(), clientError(name, args, err, errOut.String(), ctx)
	}
	return out.String(), nil
}

// clientError is a Slurm client's failure in words, its own message
// first.
func clientError(name string, args []string, err error, stderr string, ctx context.Context) error {
	msg := strings.TrimSpace(stderr)
	if ctx.Err() != nil {
		why := "was cancelled"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = "ran out of time"
		}
		err = fmt.Errorf("%s %s", name, why)
		if msg != "" {
			err = fmt.Errorf("%w: %s", err, lastLines(msg, 5))
		}
		return err
	}
	if msg == "" {
		return fmt.Errorf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return fmt.Errorf("%s: %s", name, lastLines(msg, 5))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

// capped is a buffer that keeps the first limit bytes and notes the rest.
type capped struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
	over  bool
}

func (b *capped) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.limit - b.buf.Len(); room < len(p) {
		b.over = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *capped) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var _ io.Writer = (*capped)(nil)
