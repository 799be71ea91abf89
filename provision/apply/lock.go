package apply

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
)

// LockPath is the host lock every apply takes, under the root prefix. It is
// in /run so a reboot clears it; flock(1) releases it when the holder dies,
// so a crashed controller or a dropped connection never leaves it stuck.
const LockPath = "/run/gpuform.lock"

// StepLockPath is held by the processes of the step an apply runs. A step
// takes it in its own shell, and every process the step starts inherits
// it, so it stays held while any of them runs: also after the apply that
// started the step died and its LockPath holder went with it. An apply
// that takes LockPath checks that no such orphaned step still runs.
const StepLockPath = "/run/gpuform.step.lock"

// LockBusyError is returned when another gpuform apply holds a host's lock,
// or a step of an earlier apply still runs there.
type LockBusyError struct {
	// Host is the locked host.
	Host string
	// Holder describes the other apply ("alice@ctl pid 42"), "" if unknown.
	Holder string
	// Since is when the other apply took the lock, "" if unknown.
	Since string
	// StepPID is the process id, on the host, of a step that still runs
	// although the apply that started it is gone; 0 when the lock is held
	// by a live apply, -1 when such a step runs but names no pid.
	StepPID int
	// Step is that step's description ("packages: install …").
	Step string
	// Command is the step's command line as the host's ps shows it, ""
	// when it could not be read.
	Command string
}

func (e *LockBusyError) Error() string {
	if e.StepPID != 0 {
		pid := "pid unknown"
		if e.StepPID > 0 {
			pid = fmt.Sprintf("pid %d", e.StepPID)
		}
		msg := fmt.Sprintf("a step of an earlier gpuform apply is still running on %s: %s", e.Host, pid)
		if e.Step != "" {
			msg += " (" + e.Step + ")"
		}
		if e.Command != "" {
			msg += ", command: " + e.Command
		}
		if e.Holder != "" {
			msg += "; started by " + e.Holder
			if e.Since != "" {
				msg += " at " + e.Since
			}
		}
		return msg + "; its apply is gone, so wait for the step to end (or stop it) before applying again; " + StepLockPath + " on the host names it"
	}
	msg := "another gpuform apply holds the lock on " + e.Host
	if e.Since != "" {
		msg += " since " + e.Since
	}
	if e.Holder != "" {
		msg += " (" + e.Holder + ")"
	}
	return msg + "; wait for it to finish, or check " + LockPath + " on the host"
}

// Lock holds a host's apply lock until Release.
type Lock struct {
	// owner is the line the holder wrote into LockPath; steps check it
	// (see StepPrefix).
	owner string
	stdin *io.PipeWriter
	done  chan error
	once  sync.Once
	err   error
}

// The lock scripts (scripts/*.sh, each after the nodesh prelude, with the
// lock files as arguments).
var (
	//go:embed scripts/lock_hold.sh
	lockHoldBody string
	//go:embed scripts/lock_await.sh
	lockAwaitBody string
	//go:embed scripts/step_lock.sh
	stepLockBody string
	// rebootScript restarts the host (scripts/reboot.sh); bootIDScript
	// reads the boot id that tells the boot before it from the one after.
	//go:embed scripts/reboot.sh
	rebootScript string
	//go:embed scripts/boot_id.sh
	bootIDScript string
)

// holdScript takes the lock without waiting and keeps it while its
// standard input stays open (scripts/lock_hold.sh).
func holdScript() string {
	return nodesh.Script(lockHoldBody, []string{LockPath, StepLockPath})
}

// awaitScript waits until the lock file names this apply's holder, which
// proves the holder has the lock (scripts/lock_await.sh).
func awaitScript() string { return nodesh.Script(lockAwaitBody, []string{LockPath}) }

// stepPrefix goes before every step's script (scripts/step_lock.sh): in
// the step's own shell it checks that this apply still holds LockPath and
// takes StepLockPath, which every process of the step inherits.
func stepPrefix() string {
	return nodesh.Script(stepLockBody, []string{LockPath, StepLockPath})
}

// Step returns cmd made to run as a step under l: its shell takes the step
// lock before running cmd.Script, so the lock stays held as long as any
// process of the step runs. desc names the step for the busy message of a
// later apply.
func (l *Lock) Step(cmd transport.Command, desc string) transport.Command {
	env := map[string]string{}
	for k, v := range cmd.Env {
		env[k] = v
	}
	env["GPUFORM_LOCK_OWNER"] = l.owner
	env["GPUFORM_STEP"] = strings.NewReplacer("\t", " ", "\n", " ").Replace(desc)
	cmd.Env = env
	cmd.Script = stepPrefix() + cmd.Script
	return cmd
}

// AcquireLock takes the apply lock on the host behind t, failing fast with
// a *LockBusyError when another apply holds it or a step of an apply that
// is gone still runs. owner describes this apply for that other apply's
// error message. The lock is held by one remote command that waits on its
// standard input, so it ends with Release, with the connection, or with
// this process; the steps run under it hold the step lock themselves (see
// Lock.Step).
func AcquireLock(ctx context.Context, t transport.Transport, owner string, now time.Time) (*Lock, error) {
	tok := make([]byte, 8)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	line := hex.EncodeToString(tok) + "\t" + strings.NewReplacer("\t", " ", "\n", " ").Replace(owner) + "\t" + now.UTC().Format(time.RFC3339)
	env := map[string]string{"GPUFORM_LOCK_OWNER": line}
	pr, pw := io.Pipe()
	type held struct {
		res transport.Result
		err error
	}
	holder := make(chan held, 1)
	go func() {
		// The holder outlives ctx on purpose: after Ctrl-C the step in
		// flight finishes under the lock, then Release ends it.
		res, err := t.Run(context.WithoutCancel(ctx), transport.Command{Script: holdScript(), Stdin: pr, Become: true, Env: env})
		pr.Close()
		holder <- held{res, err}
	}()
	// The await script gives up after 30 s on its own; the context bounds
	// a connection that stops answering altogether.
	awaitCtx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	awaited := make(chan error, 1)
	go func() {
		res, err := t.Run(awaitCtx, transport.Command{Script: awaitScript(), Become: true, Env: env})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("the lock holder did not take %s within 30s (exit %d) %s", LockPath, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
		}
		awaited <- err
	}()
	select {
	case h := <-holder:
		cancel()
		<-awaited //nolint:errcheck // cancelled; the holder's own error is the one to report
		return nil, holderError(t.Host(), h.res, h.err)
	case err := <-awaited:
		if err == nil {
			l := &Lock{owner: line, stdin: pw, done: make(chan error, 1)}
			go func() {
				h := <-holder
				l.done <- h.err
			}()
			return l, nil
		}
		pw.Close()
		select {
		case h := <-holder:
			// The holder's own error says why (the lock file cannot be
			// written, another apply holds it) better than the wait.
			if h.err != nil || h.res.ExitCode != 0 {
				return nil, holderError(t.Host(), h.res, h.err)
			}
		case <-time.After(10 * time.Second):
		}
		return nil, &transport.HostError{Host: t.Host(), Op: "lock", Err: err}
	}
}

// acquireWaiting takes the host lock, retrying while it is busy for up to
// opts.LockTimeout (-lock-timeout): another apply on the same host often
// ends within minutes, and a fleet apply should not fail a host for that
// when the operator said to wait.
func acquireWaiting(ctx context.Context, t transport.Transport, host string, opts Options) (*Lock, error) {
	start := time.Now()
	said := ""
	for {
		l, err := AcquireLock(ctx, t, opts.Owner, opts.Now())
		var busy *LockBusyError
		if err == nil || !errors.As(err, &busy) || opts.LockTimeout <= 0 {
			return l, err
		}
		waited := time.Since(start)
		if waited >= opts.LockTimeout {
			return nil, fmt.Errorf("%w (waited %s, the -lock-timeout)", err, opts.LockTimeout)
		}
		if msg := busy.Error(); msg != said {
			said = msg
			emit(opts, host, "waiting up to "+opts.LockTimeout.String()+" for the lock: "+msg)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (stopped waiting: %v)", err, context.Cause(ctx))
		case <-time.After(min(opts.LockPoll, opts.LockTimeout-waited)):
		}
	}
}

func holderError(host string, res transport.Result, err error) error {
	if err != nil {
		return err
	}
	if res.ExitCode == nodesh.ExitBusy {
		e := &LockBusyError{Host: host}
		kind, rest, _ := strings.Cut(strings.TrimRight(string(res.Stdout), "\n"), "\t")
		f := strings.Split(rest, "\t")
		switch {
		case kind == "apply" && len(f) == 3:
			e.Holder, e.Since = f[1], f[2]
		case kind == "step" && len(f) >= 5:
			// pid, step, token, owner, since[, command]
			_, _ = fmt.Sscan(f[0], &e.StepPID) // not a number: no pid to show
			e.Step, e.Holder, e.Since = f[1], f[3], f[4]
			if len(f) > 5 {
				e.Command = strings.TrimSpace(f[5])
			}
			if e.StepPID <= 0 {
				e.StepPID = -1
			}
		case kind == "step":
			// A step lock without its line (written by an older gpuform,
			// or emptied): still busy, with nothing to name.
			e.StepPID = -1
		}
		return e
	}
	msg := strings.TrimSpace(string(res.Stderr))
	if msg == "" {
		msg = fmt.Sprintf("exit %d", res.ExitCode)
	}
	return &transport.HostError{Host: host, Op: "lock", Err: fmt.Errorf("cannot take %s: %s", LockPath, msg)}
}

// Release ends the lock holder and waits (briefly) for it to exit. It is
// safe to call more than once.
func (l *Lock) Release() error {
	l.once.Do(func() {
		l.stdin.Close()
		select {
		case l.err = <-l.done:
		case <-time.After(10 * time.Second):
			l.err = errors.New("lock holder did not exit; the lock ends with the connection")
		}
	})
	return l.err
}
