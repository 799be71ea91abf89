package ssh

import (
	"bytes"
	"io"
	"strconv"
	"sync"
	"time"
)

// pidMarker starts the first line of stderr written by the supervising
// shell: "gpuform-pid:1234".
const pidMarker = "gpuform-pid:"

// maxMarkerLine bounds how much stderr is held back while looking for the
// marker line.
const maxMarkerLine = 64

// pidFilter passes a session's stderr to w, minus the supervisor's marker
// line, whose pid it keeps for stop.
type pidFilter struct {
	w    io.Writer
	mu   sync.Mutex
	head []byte
	done bool // marker seen, or known absent
	pid  int
	got  chan struct{}
}

func newPIDFilter(w io.Writer) *pidFilter {
	return &pidFilter{w: w, got: make(chan struct{})}
}

// Write implements io.Writer.
func (f *pidFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return f.w.Write(p)
	}
	n := len(p)
	f.head = append(f.head, p...)
	i := bytes.IndexByte(f.head, '\n')
	if i < 0 && len(f.head) <= maxMarkerLine && bytes.HasPrefix([]byte(pidMarker), f.head[:min(len(f.head), len(pidMarker))]) {
		return n, nil // the marker may still be arriving
	}
	f.done = true
	close(f.got)
	rest := f.head
	if i >= 0 && bytes.HasPrefix(f.head, []byte(pidMarker)) {
		if pid, err := strconv.Atoi(string(f.head[len(pidMarker):i])); err == nil && pid > 0 {
			f.pid = pid
			rest = f.head[i+1:]
		}
	}
	f.head = nil
	if len(rest) > 0 {
		if _, err := f.w.Write(rest); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// flush passes on anything held back; Run calls it when the command ends.
func (f *pidFilter) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.done {
		f.done = true
		close(f.got)
		_, _ = f.w.Write(f.head)
		f.head = nil
	}
}

// wait returns the supervisor's pid, waiting up to d for it to arrive; 0
// when it did not.
func (f *pidFilter) wait(d time.Duration) int {
	select {
	case <-f.got:
	case <-time.After(d):
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pid
}
