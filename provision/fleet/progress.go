package fleet

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/gpuform/gpuform/provision/transport"
)

// Progress is told what Run is doing. Run calls Start once, then
// HostStarted and HostDone for hosts (HostDone from many goroutines at
// once), then Finish once. Implementations must be safe for concurrent use.
type Progress interface {
	// Start is called before any host starts, with the number of hosts.
	Start(total int)
	// HostStarted is called when a host's work begins.
	HostStarted(host string)
	// HostDone is called when a host's work ends, or when it is skipped
	// (err is then a *NotStartedError and elapsed is 0).
	HostDone(host string, err error, elapsed time.Duration)
	// Finish is called once every host is done.
	Finish()
}

// Nop is a Progress that shows nothing.
type Nop struct{}

// Start does nothing.
func (Nop) Start(int) {}

// HostStarted does nothing.
func (Nop) HostStarted(string) {}

// HostDone does nothing.
func (Nop) HostDone(string, error, time.Duration) {}

// Finish does nothing.
func (Nop) Finish() {}

// NewProgress returns a live single-line Terminal progress when w is a
// terminal, and plain Lines otherwise (a pipe, a file, CI logs). verb names
// the work in the output, e.g. "probing".
func NewProgress(w io.Writer, verb string) Progress {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return NewTerminal(f, int(f.Fd()), verb)
	}
	return NewLines(w, verb)
}

// counts is the tally both progress views keep.
type counts struct {
	total, started, ok, failed, skipped int
	began                               time.Time
	now                                 func() time.Time
}

func (c *counts) done() int { return c.ok + c.failed + c.skipped }

func (c *counts) add(err error) {
	var ns *NotStartedError
	switch {
	case err == nil:
		c.ok++
	case errors.As(err, &ns):
		c.skipped++
	default:
		c.failed++
	}
}

func (c *counts) summary(verb string) string {
	s := fmt.Sprintf("%s: %d of %d hosts ok, %d failed", verb, c.ok, c.total, c.failed)
	if c.skipped > 0 {
		s += fmt.Sprintf(", %d not started", c.skipped)
	}
	return s + fmt.Sprintf(" (%s)", c.now().Sub(c.began).Round(100*time.Millisecond))
}

// describe renders one host's failure on one line, without repeating the
// host name that a transport.HostError already carries.
func describe(host string, err error) string {
	var he *transport.HostError
	msg := err.Error()
	if !errors.As(err, &he) || he.Host != host || !strings.HasPrefix(msg, host+":") {
		msg = host + ": " + msg
	}
	return strings.Join(strings.Fields(msg), " ")
}

// Lines writes one line per finished host and a summary: output that reads
// well in a pipe, a file or a CI log.
type Lines struct {
	w    io.Writer
	verb string
	now  func() time.Time // time.Now; tests fix it
	mu   sync.Mutex
	c    counts
}

// NewLines returns a Lines progress writing to w.
func NewLines(w io.Writer, verb string) *Lines {
	return &Lines{w: w, verb: verb, now: time.Now}
}

// Start records the number of hosts.
func (l *Lines) Start(total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c = counts{total: total, began: l.now(), now: l.now}
}

// HostStarted prints nothing: a line per start would double the output.
func (l *Lines) HostStarted(string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c.started++
}

// HostDone prints "[ n/total] host: ok (1.2s)" or the host's error.
func (l *Lines) HostDone(host string, err error, elapsed time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c.add(err)
	width := len(fmt.Sprint(l.c.total))
	prefix := fmt.Sprintf("[%*d/%d] ", width, l.c.done(), l.c.total)
	if err == nil {
		fmt.Fprintf(l.w, "%s%s: ok (%s)\n", prefix, host, elapsed.Round(10*time.Millisecond))
		return
	}
	fmt.Fprintf(l.w, "%s%s\n", prefix, describe(host, err))
}

// Finish prints the summary line.
func (l *Lines) Finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, l.c.summary(l.verb))
}

// Terminal redraws one status line in place ("\r" and erase-line) and
// prints each failure above it as it happens, so that a thousand-host run
// neither scrolls the screen away nor hides a failure.
type Terminal struct {
	w        io.Writer
	fd       int
	verb     string
	mu       sync.Mutex
	c        counts
	running  map[string]bool
	drawn    bool
	getWidth func() int
	now      func() time.Time // time.Now; tests fix it
}

// NewTerminal returns a Terminal progress writing to w, a terminal whose
// file descriptor fd is used to learn its width.
func NewTerminal(w io.Writer, fd int, verb string) *Terminal {
	t := &Terminal{w: w, fd: fd, verb: verb, running: map[string]bool{}, now: time.Now}
	t.getWidth = func() int {
		if width, _, err := term.GetSize(t.fd); err == nil && width > 0 {
			return width
		}
		return 80
	}
	return t
}

// Start records the number of hosts and draws the line.
func (t *Terminal) Start(total int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.c = counts{total: total, began: t.now(), now: t.now}
	t.redraw()
}

// HostStarted redraws the line with the host among those running.
func (t *Terminal) HostStarted(host string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.c.started++
	t.running[host] = true
	t.redraw()
}

// HostDone prints a failure above the line, then redraws it.
func (t *Terminal) HostDone(host string, err error, _ time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.running, host)
	t.c.add(err)
	var ns *NotStartedError
	// Skipped hosts are only counted: after a Ctrl-C on a large fleet, a
	// line for each would bury the real failures.
	if err != nil && !errors.As(err, &ns) {
		t.clear()
		fmt.Fprintf(t.w, "%s\n", describe(host, err))
	}
	t.redraw()
}

// Finish replaces the line with the summary.
func (t *Terminal) Finish() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clear()
	fmt.Fprintln(t.w, t.c.summary(t.verb))
}

func (t *Terminal) clear() {
	if t.drawn {
		io.WriteString(t.w, "\r\x1b[K")
		t.drawn = false
	}
}

// redraw writes the status line, cut to the terminal's width: a line that
// wraps cannot be redrawn with "\r".
func (t *Terminal) redraw() {
	line := fmt.Sprintf("%s %d/%d hosts: %d ok, %d failed, %d running",
		t.verb, t.c.done(), t.c.total, t.c.ok, t.c.failed, len(t.running))
	if len(t.running) > 0 {
		names := make([]string, 0, len(t.running))
		for h := range t.running {
			names = append(names, h)
		}
		sort.Strings(names)
		line += " (" + strings.Join(names, " ") + ")"
	}
	if w := t.getWidth() - 1; len(line) > w && w > 3 {
		line = line[:w-3] + "..."
	}
	io.WriteString(t.w, "\r\x1b[K"+line)
	t.drawn = true
}
