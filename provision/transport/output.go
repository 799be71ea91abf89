package transport

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Limits on what a transport keeps of one command's output. A real node's
// probe output is tens of kilobytes and a step's a few; a broken or hostile
// node that prints without end must cost the controller neither its memory
// nor an endless wait.
const (
	// MaxStdout is the standard output one command may write. More ends the
	// command with an *OutputLimitError: standard output is parsed (facts,
	// verify reports), and a cut-off copy must never parse as complete.
	MaxStdout = 64 << 20
	// MaxStderr is the standard error one command may write in total. It is
	// only quoted in messages, so less of it is kept (StderrHead and
	// StderrTail), but output without end still ends the command.
	MaxStderr = 64 << 20
	// StderrHead is how much of the start of standard error is kept: sudo's
	// refusals and a probe's first error come first.
	StderrHead = 64 << 10
	// StderrTail is how much of the end of standard error is kept: a step's
	// failure is quoted from its last lines.
	StderrTail = 1 << 20
)

// OutputLimitError is the cause of a command stopped because it wrote more
// than its limit to one stream. Transports report it as a HostError with Op
// "output".
type OutputLimitError struct {
	// Stream is "stdout" or "stderr".
	Stream string
	// Limit is the number of bytes the stream may hold.
	Limit int64
}

// Error says which stream overflowed and that the command was stopped.
func (e *OutputLimitError) Error() string {
	return fmt.Sprintf("the command wrote more than %d MiB to its %s and was stopped (a node whose output is this large is broken or hostile)", e.Limit>>20, e.Stream)
}

// OutputBuffer collects one stream of a command's output within a limit:
// the first head bytes and the last tail bytes are kept, and a write past
// limit bytes in total marks the buffer overflowed and closes Overflow, so
// the transport can stop the command. Writes never fail (an error would
// leave an SSH channel unread); what is past the limit is dropped.
type OutputBuffer struct {
	stream     string
	limit      int64
	headMax    int
	tailMax    int
	wmu        sync.Mutex // one writer at a time: Write or ReadFrom
	mu         sync.Mutex // the fields below
	head, tail []byte
	total      int64
	over       chan struct{}
	overOnce   sync.Once
}

// NewStdout returns a buffer for standard output: all of it is kept, up to
// MaxStdout.
func NewStdout() *OutputBuffer { return newOutputBuffer("stdout", MaxStdout, MaxStdout, 0) }

// NewStderr returns a buffer for standard error: its first StderrHead and
// last StderrTail bytes are kept, and at most MaxStderr may be written.
func NewStderr() *OutputBuffer {
	return newOutputBuffer("stderr", MaxStderr, StderrHead, StderrTail)
}

func newOutputBuffer(stream string, limit int64, head, tail int) *OutputBuffer {
	return &OutputBuffer{stream: stream, limit: limit, headMax: head, tailMax: tail, over: make(chan struct{})}
}

// Write implements io.Writer; it always accepts all of p.
func (b *OutputBuffer) Write(p []byte) (int, error) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	return b.write(p), nil
}

// ReadFrom grows what it reads into when less than minRoom is left, by
// at least minGrow (and doubling it at most).
const (
	minRoom = 512
	minGrow = 4 << 10
)

// ReadFrom implements io.ReaderFrom: it reads r until EOF straight into
// what it keeps, as Write would keep it, so that a copy into the buffer
// (an SSH session's io.Copy of each stream) needs no buffer of its own,
// 32 kB a stream. Past the limit what is read is dropped, as by Write.
// EOF is not an error.
func (b *OutputBuffer) ReadFrom(r io.Reader) (int64, error) {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	var total int64
	var drop []byte
	for {
		// Only this writer appends, so the room past len is its own
		// while it reads; Bytes sees no more than len.
		b.mu.Lock()
		var room []byte
		to := toDrop
		switch left := b.limit - b.total; {
		case left <= 0:
			if drop == nil {
				drop = make([]byte, 512)
			}
			room = drop
		case len(b.head) < b.headMax:
			b.head, room = grow(b.head, min(int64(b.headMax-len(b.head)), left))
			to = toHead
		case b.tailMax > 0:
			b.tail, room = grow(b.tail, min(int64(2*b.tailMax-len(b.tail)), left))
			to = toTail
		default:
			// Nothing more is kept before the limit: read to count.
			if drop == nil {
				drop = make([]byte, 512)
			}
			room = drop[:min(int64(len(drop)), left)]
		}
		b.mu.Unlock()
		n, err := r.Read(room)
		if n > 0 {
			total += int64(n)
			b.mu.Lock()
			switch {
			case b.total >= b.limit:
				b.overOnce.Do(func() { close(b.over) })
			case to == toHead:
				b.head = b.head[:len(b.head)+n]
				b.total += int64(n)
			case to == toDrop:
				b.total += int64(n)
			default:
				b.tail = b.tail[:len(b.tail)+n]
				b.total += int64(n)
				if len(b.tail) >= 2*b.tailMax {
					b.tail = append(b.tail[:0], b.tail[len(b.tail)-b.tailMax:]...)
				}
			}
			b.mu.Unlock()
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// Where ReadFrom reads to.
const (
	toDrop = iota // counted, not kept
	toHead
	toTail
)

// grow returns s with room for at least min(want, minRoom) more bytes
// (growing it by at most want), and that room, at most want bytes long.
func grow(s []byte, want int64) ([]byte, []byte) {
	if int64(cap(s)-len(s)) < min(want, minRoom) {
		t := make([]byte, len(s), int64(len(s))+min(want, max(int64(len(s)), minGrow)))
		copy(t, s)
		s = t
	}
	return s, s[len(s) : len(s)+int(min(int64(cap(s)-len(s)), want))]
}

func (b *OutputBuffer) write(p []byte) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if b.total+int64(n) > b.limit {
		p = p[:max(0, b.limit-b.total)]
		b.overOnce.Do(func() { close(b.over) })
	}
	b.total += int64(len(p))
	if room := b.headMax - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) > 0 && b.tailMax > 0 {
		b.tail = append(b.tail, p...)
		// Trim only once the tail holds twice its size, so the copy is
		// amortised over the bytes written.
		if len(b.tail) >= 2*b.tailMax {
			b.tail = append(b.tail[:0], b.tail[len(b.tail)-b.tailMax:]...)
		}
	}
	return n
}

// Overflow is closed once the stream went past its limit.
func (b *OutputBuffer) Overflow() <-chan struct{} { return b.over }

// Err is an *OutputLimitError once the stream went past its limit, nil
// before.
func (b *OutputBuffer) Err() error {
	select {
	case <-b.over:
		return &OutputLimitError{Stream: b.stream, Limit: b.limit}
	default:
		return nil
	}
}

// Bytes returns what was kept: the head, a line saying how much was left
// out when anything was, and the tail.
func (b *OutputBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := b.tail
	if len(tail) > b.tailMax {
		tail = tail[len(tail)-b.tailMax:]
	}
	dropped := b.total - int64(len(b.head)) - int64(len(tail))
	if dropped == 0 && len(tail) == 0 {
		// All of standard output: no copy of up to MaxStdout bytes.
		return b.head
	}
	out := append([]byte(nil), b.head...)
	if dropped > 0 {
		out = append(out, "\n[gpuform: "+strconv.FormatInt(dropped, 10)+" bytes of "+b.stream+" left out]\n"...)
	}
	return append(out, tail...)
}

// FirstOverflow returns the error of the first of bufs that overflowed, or
// nil.
func FirstOverflow(bufs ...*OutputBuffer) error {
	for _, b := range bufs {
		if err := b.Err(); err != nil {
			return err
		}
	}
	return nil
}
