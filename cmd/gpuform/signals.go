package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpuform/gpuform/provision/fleet"
)

// errInterrupted is the cause of the context a first SIGINT or SIGTERM
// cancels.
var errInterrupted = errors.New("interrupted")

// interrupts turns SIGINT and SIGTERM into what the operator expects of
// each command. Commands that reach hosts are graceful: the first signal
// cancels their context (no new host or step starts, the step in flight
// finishes or is stopped, host locks are released) and a second one exits
// at once, naming what was left in flight. Every other command (validate,
// lint, fmt) only reads and writes local files and stops on the first
// signal. A nil *interrupts (the in-process CLI of the tests) does nothing.
type interrupts struct {
	w      io.Writer
	exit   func(int)
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	graceful bool
	signals  int
	inflight map[string]string // host -> what it is doing
}

// watchSignals installs the handler and returns the context to run the CLI
// with, and a function that removes the handler.
func watchSignals(w io.Writer, exit func(int)) (*interrupts, context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	in := &interrupts{w: w, exit: exit, cancel: cancel, inflight: map[string]string{}}
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-ch:
				in.handle(sig)
			case <-done:
				return
			}
		}
	}()
	return in, ctx, func() {
		signal.Stop(ch)
		close(done)
	}
}

// setGraceful says whether the running command honours cancellation. A
// command that waits for input it cannot cancel (apply's confirmation
// prompt) turns it off while it waits.
func (in *interrupts) setGraceful(g bool) {
	if in == nil {
		return
	}
	in.mu.Lock()
	in.graceful = g
	in.mu.Unlock()
}

// ungraceful turns cancellation off until the returned function restores
// the previous setting: for work that cannot be cancelled and leaves
// nothing in flight (reading the spec, where a -var-file FIFO nobody
// writes blocks in open), so that one signal stops the command.
func (in *interrupts) ungraceful() (restore func()) {
	if in == nil {
		return func() {}
	}
	in.mu.Lock()
	prev := in.graceful
	in.graceful = false
	in.mu.Unlock()
	return func() { in.setGraceful(prev) }
}

// doing records what host is doing now; "" means it is done.
func (in *interrupts) doing(host, what string) {
	if in == nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if what == "" {
		delete(in.inflight, host)
		return
	}
	in.inflight[host] = what
}

func (in *interrupts) handle(sig os.Signal) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.signals++
	name := "Interrupt"
	if sig == syscall.SIGTERM {
		name = "SIGTERM"
	}
	if in.signals == 1 && in.graceful {
		fmt.Fprintf(in.w, "\n%s received: stopping. No new host or step starts; each host finishes the command it runs, then releases its lock. Send it again to exit at once.\n", name)
		in.cancel(errInterrupted)
		return
	}
	if in.signals == 1 {
		fmt.Fprintf(in.w, "\n%s received: stopped.\n", name)
		in.exit(ExitFailed)
		return
	}
	if len(in.inflight) == 0 {
		fmt.Fprintf(in.w, "%s received again: exiting at once.\n", name)
		in.exit(ExitFailed)
		return
	}
	hosts := make([]string, 0, len(in.inflight))
	for h := range in.inflight {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var b strings.Builder
	fmt.Fprintf(&b, "%s received again: exiting at once. Left in flight (a step keeps the host locked until it ends on its own; the next apply names it):\n", name)
	for _, h := range hosts {
		fmt.Fprintf(&b, "  %s: %s\n", h, in.inflight[h])
	}
	io.WriteString(in.w, b.String())
	in.exit(ExitFailed)
}

// trackFleet wraps p so that the hosts it runs on count as in flight.
func (in *interrupts) trackFleet(p fleet.Progress, what string) fleet.Progress {
	if in == nil {
		return p
	}
	return trackedProgress{Progress: p, in: in, what: what}
}

type trackedProgress struct {
	fleet.Progress
	in   *interrupts
	what string
}

func (t trackedProgress) HostStarted(host string) {
	t.in.doing(host, t.what)
	t.Progress.HostStarted(host)
}

func (t trackedProgress) HostDone(host string, err error, elapsed time.Duration) {
	t.in.doing(host, "")
	t.Progress.HostDone(host, err, elapsed)
}
