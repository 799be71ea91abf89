package ssh

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"
)

// pidMarker starts the line of stderr written by the supervising shell:
// "gpuform-pid:1234".
const pidMarker = "gpuform-pid:"

// maxMarkerSearch bounds how much stderr is looked through for the marker.
// Anything the login shell's rc files print comes before it (Debian's bash
// reads ~/.bashrc for ssh commands); a few KiB of that is already a lot.
const maxMarkerSearch = 4096

// pidFilter passes a session's stderr to w, minus the supervisor's marker
// line, whose pid it keeps for stop. Lines before the marker are passed on
// as they complete.
type pidFilter struct {
	w        io.Writer
	mu       sync.Mutex
	head     []byte // an incomplete line, held until its newline
	searched int    // bytes looked through so far
	done     bool   // marker found, or search given up
	pid      int
	got      chan struct{}
}

func newPIDFilter(w io.Writer) *pidFilter {
	return &pidFilter{w: w, got: make(chan struct{})}
}

// parseMarker reads "gpuform-pid:N" with N a positive decimal of at most
// ten digits and nothing else: what `echo gpuform-pid:$$` prints.
func parseMarker(line []byte) (int, bool) {
	digits, ok := bytes.CutPrefix(line, []byte(pidMarker))
	if !ok || len(digits) == 0 || len(digits) > 10 || digits[0] == '0' {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	pid, err := strconv.Atoi(string(digits))
	return pid, err == nil && pid > 0
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
	for !f.done {
		i := bytes.IndexByte(f.head, '\n')
		if i < 0 {
			if f.searched+len(f.head) > maxMarkerSearch {
				f.finish()
				if _, err := f.w.Write(f.head); err != nil {
					return 0, err
				}
				f.head = nil
			}
			break
		}
		line := f.head[:i+1]
		f.head = f.head[i+1:]
		// The marker may end a line an rc file left without its newline
		// ("Welcome" + "gpuform-pid:12"): that text is passed on.
		if k := bytes.LastIndex(line[:i], []byte(pidMarker)); k >= 0 {
			if pid, ok := parseMarker(line[k:i]); ok {
				if k > 0 {
					if _, err := f.w.Write(append(line[:k:k], '\n')); err != nil {
						return 0, err
					}
				}
				f.pid = pid
				f.finish()
				break
			}
		}
		f.searched += len(line)
		if _, err := f.w.Write(line); err != nil {
			return 0, err
		}
		if f.searched > maxMarkerSearch {
			f.finish()
		}
	}
	if f.done && len(f.head) > 0 {
		if _, err := f.w.Write(f.head); err != nil {
			return 0, err
		}
		f.head = nil
	}
	return n, nil
}

// ReadFrom implements io.ReaderFrom, so that the session's copy of
// stderr needs no 32 kB buffer of its own: the marker comes first, read
// through a small buffer, and once it is found (or given up) the rest is
// read by w itself where w can (an OutputBuffer reads into what it keeps).
func (f *pidFilter) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	buf := make([]byte, 512)
	for {
		f.mu.Lock()
		done := f.done
		f.mu.Unlock()
		if rf, ok := f.w.(io.ReaderFrom); ok && done {
			n, err := rf.ReadFrom(r)
			return total + n, err
		}
		n, err := r.Read(buf)
		if n > 0 {
			total += int64(n)
			if _, werr := f.Write(buf[:n]); werr != nil {
				return total, werr
			}
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (f *pidFilter) finish() {
	f.done = true
	close(f.got)
}

// flush passes on anything held back; Run calls it when the command ends.
func (f *pidFilter) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.done {
		f.finish()
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
