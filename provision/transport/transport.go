// Package transport defines how gpuform reaches a node: one interface, with
// implementations for SSH (package provision/ssh), the local machine, and
// simulated nodes. It is not where facts are parsed or changes decided; it
// only runs commands and moves bytes.
package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Command is one remote command. Script is handed to a POSIX shell on the
// node exactly as written; callers build it only from quoted values (see
// Quote) so that nothing from a spec reaches the shell unquoted.
type Command struct {
	// Script is the shell text to run, interpreted by /bin/sh -c.
	Script string
	// Stdin, when non-nil, is streamed to the command's standard input.
	Stdin io.Reader
	// Become runs the command with elevated privilege (sudo -n) when the
	// transport was configured with a become method.
	Become bool
	// Env is added to the command's environment. Keys must be valid shell
	// identifiers; values are quoted by the transport.
	Env map[string]string
}

// Result is what a finished command left behind.
type Result struct {
	// Stdout is everything the command wrote to standard output.
	Stdout []byte
	// Stderr is everything the command wrote to standard error.
	Stderr []byte
	// ExitCode is the command's exit status; -1 when it was killed by a signal.
	ExitCode int
}

// Transport runs commands on one node. Implementations reuse a single
// connection for every command of a run and honour context cancellation by
// ending the remote command.
type Transport interface {
	// Host is the name the operator used for the node (inventory entry).
	Host() string
	// Run executes cmd and waits for it to finish. A non-zero exit status is
	// not an error: it is reported in Result.ExitCode. Errors mean the command
	// could not be run or its connection failed.
	Run(ctx context.Context, cmd Command) (Result, error)
	// Close releases the connection. It is safe to call more than once.
	Close() error
}

// HostError is a failure that belongs to one host (DNS, refused, auth, host
// key, timeout, dropped connection). Fleet operations report it for that host
// and carry on with the others.
type HostError struct {
	// Host is the node the error belongs to.
	Host string
	// Op says what was being done: "connect", "auth", "host key", "run", …
	Op string
	// Err is the underlying cause.
	Err error
}

// Error renders the error as "HOST: OP: CAUSE", the cause made safe to
// print with HostText since it often quotes the host's own output.
func (e *HostError) Error() string {
	return e.Host + ": " + e.Detail()
}

// Detail renders the error without its host, as "OP: CAUSE", for output
// that already shows the host beside it. The cause goes through HostText
// and is kept on one line, as an error is: its lines are joined by spaces.
func (e *HostError) Detail() string {
	return e.Op + ": " + strings.ReplaceAll(HostText(fmt.Sprint(e.Err)), "\n"+hostLinePrefix, " ")
}

// Unwrap returns the underlying cause.
func (e *HostError) Unwrap() error { return e.Err }

// TimeoutError is the cause of a context ended by WithTimeout: what ran out
// of time, its limit, and the setting that changes it. Transports report a
// command ended by it as a HostError with Op "timeout".
type TimeoutError struct {
	// What timed out ("the probe", "step 3/9 (packages: install …)").
	What string
	// Limit is the time it was given.
	Limit time.Duration
	// Setting names the flag or spec attribute that sets Limit.
	Setting string
}

// Error says what did not finish, within what, and how to allow more.
func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("%s did not finish within %s and was stopped", e.What, e.Limit)
	if e.Setting != "" {
		msg += " (raise it with " + e.Setting + ")"
	}
	return msg
}

// Unwrap makes errors.Is(err, context.DeadlineExceeded) hold.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// WithTimeout returns ctx bounded by limit, its cause a *TimeoutError
// saying what ran out of time. A limit of zero or less leaves ctx
// unbounded.
func WithTimeout(ctx context.Context, limit time.Duration, what, setting string) (context.Context, context.CancelFunc) {
	if limit <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, limit, &TimeoutError{What: what, Limit: limit, Setting: setting})
}

// ContextError is what a transport returns for a command ended by ctx: a
// HostError whose Op is "timeout" for a deadline (with the *TimeoutError
// cause when WithTimeout set it) and "run" for a cancellation.
func ContextError(ctx context.Context, host string) *HostError {
	var te *TimeoutError
	if errors.As(context.Cause(ctx), &te) {
		return &HostError{Host: host, Op: "timeout", Err: te}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &HostError{Host: host, Op: "timeout", Err: ctx.Err()}
	}
	return &HostError{Host: host, Op: "run", Err: ctx.Err()}
}
