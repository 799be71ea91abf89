package transport

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestOutputBuffer: what is kept of a stream, and when it overflows.
func TestOutputBuffer(t *testing.T) {
	tests := map[string]struct {
		limit      int64
		head, tail int
		writes     []string
		want       string
		overflow   bool
	}{
		"within every limit":   {limit: 100, head: 10, tail: 10, writes: []string{"abc", "def"}, want: "abcdef"},
		"head and tail kept":   {limit: 100, head: 3, tail: 3, writes: []string{"abcdefgh", "ij"}, want: "abc\n[gpuform: 4 bytes of stderr left out]\nhij"},
		"tail trimmed often":   {limit: 100, head: 1, tail: 2, writes: []string{"a", "b", "c", "d", "e", "f", "g"}, want: "a\n[gpuform: 4 bytes of stderr left out]\nfg"},
		"exactly the limit":    {limit: 6, head: 6, writes: []string{"abc", "def"}, want: "abcdef"},
		"one byte past":        {limit: 6, head: 6, writes: []string{"abc", "defg"}, want: "abcdef", overflow: true},
		"writes after the end": {limit: 2, head: 2, writes: []string{"abc", "def"}, want: "ab", overflow: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := newOutputBuffer("stderr", tc.limit, tc.head, tc.tail)
			for _, w := range tc.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want every byte accepted", w, n, err)
				}
			}
			if got := string(b.Bytes()); got != tc.want {
				t.Errorf("Bytes() = %q, want %q", got, tc.want)
			}
			var le *OutputLimitError
			if got := errors.As(b.Err(), &le); got != tc.overflow {
				t.Errorf("overflowed = %v (%v), want %v", got, b.Err(), tc.overflow)
			}
			select {
			case <-b.Overflow():
				if !tc.overflow {
					t.Error("Overflow closed within the limit")
				}
			default:
				if tc.overflow {
					t.Error("Overflow not closed past the limit")
				}
			}
		})
	}
}

// TestOutputBufferMemory: endless standard error keeps at most its head
// and twice its tail in memory.
func TestOutputBufferMemory(t *testing.T) {
	b := NewStderr()
	chunk := bytes.Repeat([]byte("y\n"), 16<<10)
	for i := 0; i < MaxStderr/len(chunk); i++ {
		b.Write(chunk)
		if held := len(b.head) + cap(b.tail); held > StderrHead+3*StderrTail {
			t.Fatalf("after %d bytes the buffer holds %d", (i+1)*len(chunk), held)
		}
	}
	if b.Err() != nil {
		t.Fatalf("exactly MaxStderr bytes overflowed: %v", b.Err())
	}
	b.Write([]byte("x"))
	if err := b.Err(); err == nil || !strings.Contains(err.Error(), "64 MiB to its stderr") {
		t.Errorf("past MaxStderr: %v", err)
	}
}
