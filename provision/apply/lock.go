package apply

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gpuform/gpuform/provision/transport"
)

// LockPath is the host lock every apply takes, under the root prefix. It is
// in /run so a reboot clears it; flock(1) releases it when the holder dies,
// so a crashed controller or a dropped connection never leaves it stuck.
const LockPath = "/run/gpuform.lock"

// exitBusy is what the lock holder exits with when another apply holds the
// lock (EX_TEMPFAIL).
const exitBusy = 75

// LockBusyError is returned when another gpuform apply holds a host's lock.
type LockBusyError struct {
	// Host is the locked host.
	Host string
	// Holder describes the other apply ("alice@ctl pid 42"), "" if unknown.
	Holder string
	// Since is when the other apply took the lock, "" if unknown.
	Since string
}

func (e *LockBusyError) Error() string {
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
	stdin *io.PipeWriter
	done  chan error
	once  sync.Once
	err   error
}

// holdScript takes the lock without waiting and keeps it while its
// standard input stays open. The first line of the lock file names the
// holder, for the message a second apply prints.
const holdScript = `R=${GPUFORM_ROOT:-}
L="$R"` + LockPath + `
mkdir -p -- "${L%/*}"
exec 9>>"$L"
if ! flock -n 9; then
	# The holder writes its name just after it locks; give it a moment.
	sleep 0.3
	head -n 1 -- "$L" 2>/dev/null
	exit 75
fi
printf '%s\n' "$GPUFORM_LOCK_OWNER" >"$L"
cat >/dev/null
: >"$L"
`

// awaitScript waits until the lock file names this apply's holder, which
// proves the holder has the lock.
const awaitScript = `R=${GPUFORM_ROOT:-}
L="$R"` + LockPath + `
i=0
while [ "$(head -n 1 -- "$L" 2>/dev/null)" != "$GPUFORM_LOCK_OWNER" ]; do
	i=$((i + 1))
	[ "$i" -lt 600 ] || exit 75
	sleep 0.05
done
`

// AcquireLock takes the apply lock on the host behind t, failing fast with
// a *LockBusyError when another apply holds it. owner describes this apply
// for that other apply's error message. The lock is held by one remote
// command that waits on its standard input, so it ends with Release, with
// the connection, or with this process.
func AcquireLock(ctx context.Context, t transport.Transport, owner string, now time.Time) (*Lock, error) {
	tok := make([]byte, 8)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	line := hex.EncodeToString(tok) + "\t" + strings.ReplaceAll(owner, "\t", " ") + "\t" + now.UTC().Format(time.RFC3339)
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
		res, err := t.Run(context.WithoutCancel(ctx), transport.Command{Script: holdScript, Stdin: pr, Become: true, Env: env})
		pr.Close()
		holder <- held{res, err}
	}()
	// The await script gives up after 30 s on its own; the context bounds
	// a connection that stops answering altogether.
	awaitCtx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	awaited := make(chan error, 1)
	go func() {
		res, err := t.Run(awaitCtx, transport.Command{Script: awaitScript, Become: true, Env: env})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("lock holder did not start (exit %d): %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
		}
		awaited <- err
	}()
	select {
	case h := <-holder:
		cancel()
		<-awaited
		return nil, holderError(t.Host(), h.res, h.err)
	case err := <-awaited:
		if err == nil {
			l := &Lock{stdin: pw, done: make(chan error, 1)}
			go func() {
				h := <-holder
				l.done <- h.err
			}()
			return l, nil
		}
		pw.Close()
		select {
		case h := <-holder:
			if herr := holderError(t.Host(), h.res, h.err); errors.As(herr, new(*LockBusyError)) {
				return nil, herr
			}
		case <-time.After(10 * time.Second):
		}
		return nil, &transport.HostError{Host: t.Host(), Op: "lock", Err: err}
	}
}

func holderError(host string, res transport.Result, err error) error {
	if err != nil {
		return err
	}
	if res.ExitCode == exitBusy {
		e := &LockBusyError{Host: host}
		f := strings.Split(strings.TrimSpace(string(res.Stdout)), "\t")
		if len(f) == 3 {
			e.Holder, e.Since = f[1], f[2]
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
