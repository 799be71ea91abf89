// Package local is the transport for the machine gpuform runs on: every
// command is handed to /bin/sh -c as a child process. It serves gpuform used
// on the node itself (a health check, `gpuform facts --root` on an unpacked
// image) and tests. It is not a way to reach other machines.
package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gpuform/gpuform/internal/text"
	"github.com/gpuform/gpuform/provision/transport"
)

// Transport runs commands on the local machine.
type Transport struct {
	host string
	// shell is the POSIX shell used for every command.
	shell string
	// env is added to every command's environment before Command.Env.
	env map[string]string
	// geteuid reports the effective user; tests replace it to exercise
	// the sudo path while running as root.
	geteuid func() int
}

// Option configures a Transport.
type Option func(*Transport)

// WithEnv adds variables to the environment of every command (Command.Env
// still wins for the same key). The sim transport uses it to point commands
// at a simulated root.
func WithEnv(env map[string]string) Option {
	return func(t *Transport) {
		for k, v := range env {
			t.env[k] = v
		}
	}
}

// New returns a transport that runs commands on this machine and reports
// them as host (e.g. "localhost").
func New(host string, opts ...Option) *Transport {
	t := &Transport{host: host, shell: "/bin/sh", env: map[string]string{}, geteuid: os.Geteuid}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Host returns the name given to New.
func (t *Transport) Host() string { return t.host }

// Close does nothing: there is no connection to release.
func (t *Transport) Close() error { return nil }

// waitDelay bounds how long Run waits for output pipes after the process
// group was killed, in case a grandchild escaped the group.
const waitDelay = 2 * time.Second

// Run executes cmd.Script with /bin/sh -c. With Become it runs under
// `sudo -n` unless gpuform already runs as root; sudo never prompts, and a
// password requirement comes back as the command's error output. When ctx
// ends, the whole process group is killed, so a command's children do not
// outlive it.
func (t *Transport) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	env := map[string]string{}
	for k, v := range t.env {
		env[k] = v
	}
	for k, v := range cmd.Env {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		if !text.IsIdent(k) {
			return transport.Result{}, &transport.HostError{Host: t.host, Op: "run", Err: fmt.Errorf("environment name %q is not a shell identifier", k)}
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)

	// A command whose output passes its limit is killed through runCtx,
	// and reported as an output error rather than a cancellation.
	stdout, stderr := transport.NewStdout(), transport.NewStderr()
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stdout.Overflow():
		case <-stderr.Overflow():
		case <-ctx.Done():
		}
		cancel()
	}()
	var c *exec.Cmd
	sudo := cmd.Become && t.geteuid() != 0
	if sudo {
		// sudo resets the environment (env_reset), so variables travel as
		// quoted exports at the top of the script instead.
		var pre strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&pre, "export %s=%s\n", k, transport.Quote(env[k]))
		}
		c = exec.CommandContext(ctx, "sudo", "-n", "--", t.shell, "-c", pre.String()+cmd.Script)
		c.Env = os.Environ()
	} else {
		c = exec.CommandContext(ctx, t.shell, "-c", cmd.Script)
		c.Env = os.Environ()
		for _, k := range keys {
			c.Env = append(c.Env, k+"="+env[k])
		}
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error {
		// A negative pid signals the process group created by Setpgid.
		return syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
	c.WaitDelay = waitDelay
	c.Stdout, c.Stderr = stdout, stderr
	var err error
	if _, isFile := cmd.Stdin.(*os.File); isFile || cmd.Stdin == nil {
		c.Stdin = cmd.Stdin
		err = c.Run()
	} else {
		// exec copies any other reader in a goroutine and Wait waits for
		// that copy: a command that exits without reading a stdin that
		// never ends (the apply lock holder failing at once) would be
		// reported only after WaitDelay. A pipe of our own is closed by
		// Wait as soon as the process is gone.
		err = t.runWithStdin(c, cmd.Stdin)
	}
	res := transport.Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if err := transport.FirstOverflow(stdout, stderr); err != nil {
		res.ExitCode = -1
		return res, &transport.HostError{Host: t.host, Op: "output", Err: err}
	}
	if parent.Err() != nil {
		res.ExitCode = -1
		return res, transport.ContextError(parent, t.host)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		res.ExitCode = 0
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
		// sudo -n refuses instead of prompting; say so rather than
		// reporting a failed command.
		if sudo && res.ExitCode == 1 && bytes.Contains(res.Stderr, []byte("sudo: a password is required")) {
			return res, &transport.HostError{Host: t.host, Op: "become", Err: errors.New("sudo needs a password for this user; allow it with NOPASSWD in sudoers or run gpuform as root")}
		}
	default:
		return res, &transport.HostError{Host: t.host, Op: "run", Err: err}
	}
	return res, nil
}

// runWithStdin runs c with in copied to its standard input by a goroutine
// that Wait does not wait for.
func (t *Transport) runWithStdin(c *exec.Cmd, in io.Reader) error {
	w, err := c.StdinPipe()
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	go func() {
		_, _ = io.Copy(w, in)
		w.Close()
	}()
	return c.Wait()
}
