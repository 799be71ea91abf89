// Package nodesh is the node side of gpuform's apply in one place: the
// POSIX sh prelude every step script and lock script starts with, the exit
// statuses those scripts and the Go code that reads them agree on, and the
// one way a script is put together with its values.
//
// A script is an embedded .sh file of the package that runs it (a
// provision/resource step, the apply lock), reviewable and shellcheck-clean
// as it is. Its values travel as positional arguments, each quoted with
// transport.Quote in a "set -- ..." line that Script writes between the
// prelude and the script; no value is ever spliced into a script's text.
package nodesh

import (
	_ "embed"
	"strings"

	"github.com/gpuform/gpuform/provision/transport"
)

// Prelude is prelude.sh: R=${GPUFORM_ROOT:-}, the EXIT_* statuses and the
// helpers fail, run_binary and binary_path. It only sets variables and
// defines functions.
//
//go:embed prelude.sh
var Prelude string

// Exit statuses the node-side scripts end with and Go code tells apart.
// prelude.sh sets each as a shell variable (EXIT_OS_ERROR, ...); a test
// checks the two agree.
const (
	// ExitOSError: a file gpuform needs (the lock file) cannot be made or
	// written (sysexits.h's EX_OSERR).
	ExitOSError = 71
	// ExitBusy: another apply holds the host's lock, or a step of an
	// earlier apply still runs there (EX_TEMPFAIL).
	ExitBusy = 75
	// ExitNotOffered: no repository of the node offers the package release
	// asked for. It is apt-get's own status for a failed install, so the
	// step fails as apt would.
	ExitNotOffered = 100
	// ExitInterrupted: the step's shell was stopped by a signal (128 +
	// SIGINT).
	ExitInterrupted = 130
	// ExitNotFound: a tool the script needs is not on the node (the
	// shell's own status for a command not found).
	ExitNotFound = 127
)

// Statuses of timeout(1), under which a script runs a command whose time
// is bounded on the node; no script exits with them itself.
const (
	// ExitTimedOut: the command ran out of time and ended on timeout's
	// TERM.
	ExitTimedOut = 124
	// ExitTimedOutKilled: the command ignored the TERM and timeout -k
	// killed it (128 + SIGKILL).
	ExitTimedOutKilled = 137
)

// Script returns the script to run on a node: the prelude, then each of
// libs (shell that defines functions, such as facts.Resolver), then args
// as the positional parameters, then body. Without args the positional
// parameters are left as the shell has them (none).
func Script(body string, args []string, libs ...string) string {
	var set string
	if len(args) > 0 {
		set = Args(args...)
	}
	// One allocation of the final size: a plan builds tens of these a
	// host (the prelude and libraries are about 450 kB a host), and
	// growing the builder by doubling allocated twice that.
	n := len(Prelude) + len(set) + len(body)
	for _, l := range libs {
		n += len(l)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(Prelude)
	for _, l := range libs {
		b.WriteString(l)
	}
	b.WriteString(set)
	b.WriteString(body)
	return b.String()
}

// Args is the "set -- ..." line that makes args a script's positional
// parameters, each quoted with transport.Quote.
func Args(args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = transport.Quote(a)
	}
	return "set -- " + strings.Join(q, " ") + "\n"
}
