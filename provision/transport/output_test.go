package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
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
	// Each case is written three ways: with Write, and copied in with
	// ReadFrom (what io.Copy uses) one write a Read and one byte a Read.
	feeds := map[string]func(b *OutputBuffer, writes []string) error{
		"Write": func(b *OutputBuffer, writes []string) error {
			for _, w := range writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					return fmt.Errorf("Write(%q) = %d, %v; want every byte accepted", w, n, err)
				}
			}
			return nil
		},
		"ReadFrom": func(b *OutputBuffer, writes []string) error {
			return readFrom(b, &chunks{writes: append([]string(nil), writes...)}, writes)
		},
		"ReadFrom one byte at a time": func(b *OutputBuffer, writes []string) error {
			return readFrom(b, iotest.OneByteReader(strings.NewReader(strings.Join(writes, ""))), writes)
		},
	}
	for name, tc := range tests {
		for feedName, feed := range feeds {
			t.Run(name+"/"+feedName, func(t *testing.T) {
				b := newOutputBuffer("stderr", tc.limit, tc.head, tc.tail)
				if err := feed(b, tc.writes); err != nil {
					t.Fatal(err)
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

// chunks reads its writes one a Read, and is no io.WriterTo (as an SSH
// channel is not), so io.Copy would use the writer's ReadFrom.
type chunks struct{ writes []string }

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.writes) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.writes[0])
	if c.writes[0] = c.writes[0][n:]; c.writes[0] == "" {
		c.writes = c.writes[1:]
	}
	return n, nil
}

// readFrom copies r into b with io.Copy, which must use b.ReadFrom, and
// checks that every byte was read.
func readFrom(b *OutputBuffer, r io.Reader, writes []string) error {
	n, err := io.Copy(b, r)
	if want := len(strings.Join(writes, "")); n != int64(want) || err != nil {
		return fmt.Errorf("io.Copy = %d, %v; want %d bytes read", n, err, want)
	}
	return nil
}

// TestOutputBufferReadFromNeedsNoCopyBuffer: io.Copy of a command's
// output into a buffer reads it in place, without the 32 kB buffer
// io.Copy allocates for a writer that is no io.ReaderFrom, which an SSH
// session holds for each stream while its command runs: a 2 kB output
// (a step's, or a probe's stderr) costs a few kB, not 34.
func TestOutputBufferReadFromNeedsNoCopyBuffer(t *testing.T) {
	out := strings.Repeat("x", 2<<10)
	writes := []string{out[:1000], out[1000:]}
	for name, newBuf := range map[string]func() *OutputBuffer{"stdout": NewStdout, "stderr": NewStderr} {
		const runs = 20
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			b := newBuf()
			if err := readFrom(b, &chunks{writes: append([]string(nil), writes...)}, writes); err != nil {
				t.Fatal(err)
			}
			if string(b.Bytes()) != out {
				t.Fatalf("%s: the output was not kept whole", name)
			}
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 8<<10 {
			t.Errorf("%s: io.Copy of %d bytes allocated %d bytes; want at most %d", name, len(out), per, 8<<10)
		}
	}
}
