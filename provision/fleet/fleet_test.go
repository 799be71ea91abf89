package fleet

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/transport"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func hostNames(n int) []string {
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("gpu-%02d", i)
	}
	return hosts
}

func TestRunReportsEveryHost(t *testing.T) {
	hosts := hostNames(20)
	fail := map[string]bool{"gpu-03": true, "gpu-07": true, "gpu-19": true}
	var calls atomic.Int32
	results := Run(context.Background(), hosts, 4, func(ctx context.Context, host string) error {
		calls.Add(1)
		if fail[host] {
			return &transport.HostError{Host: host, Op: "connect", Err: errors.New("connection refused")}
		}
		return nil
	}, nil)
	if len(results) != len(hosts) {
		t.Fatalf("got %d results, want %d", len(results), len(hosts))
	}
	if calls.Load() != int32(len(hosts)) {
		t.Errorf("fn called %d times, want %d", calls.Load(), len(hosts))
	}
	for _, h := range hosts {
		err, ok := results[h]
		if !ok {
			t.Errorf("no result for %s", h)
			continue
		}
		var he *transport.HostError
		if fail[h] != (err != nil) || (err != nil && (!errors.As(err, &he) || he.Host != h)) {
			t.Errorf("result for %s = %v", h, err)
		}
	}
}

func TestParallelismIsRespected(t *testing.T) {
	tests := map[string]struct {
		hosts, parallelism, wantMax int
	}{
		"one at a time": {hosts: 6, parallelism: 1, wantMax: 1},
		"four":          {hosts: 16, parallelism: 4, wantMax: 4},
		// Fewer hosts than slots: all of them at once.
		"more slots than hosts": {hosts: 5, parallelism: 32, wantMax: 5},
		// Zero means DefaultParallelism.
		"default": {hosts: DefaultParallelism + 8, parallelism: 0, wantMax: DefaultParallelism},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var active, peak atomic.Int32
			Run(context.Background(), hostNames(tt.hosts), tt.parallelism, func(ctx context.Context, host string) error {
				n := active.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(40 * time.Millisecond)
				active.Add(-1)
				return nil
			}, nil)
			if got := int(peak.Load()); got != tt.wantMax {
				t.Errorf("at most %d hosts ran at once, want %d", got, tt.wantMax)
			}
		})
	}
}

func TestCancelStopsStartingHosts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hosts := hostNames(10)
	var started atomic.Int32
	results := Run(ctx, hosts, 2, func(ctx context.Context, host string) error {
		started.Add(1)
		cancel()
		<-ctx.Done()
		return &transport.HostError{Host: host, Op: "run", Err: ctx.Err()}
	}, nil)
	if n := started.Load(); n > 2 {
		t.Errorf("%d hosts started after cancellation, want at most 2", n)
	}
	if len(results) != len(hosts) {
		t.Fatalf("got %d results, want %d", len(results), len(hosts))
	}
	skipped := 0
	for h, err := range results {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want an error wrapping context.Canceled", h, err)
		}
		var ns *NotStartedError
		if errors.As(err, &ns) {
			skipped++
		}
	}
	if skipped != len(hosts)-int(started.Load()) {
		t.Errorf("%d hosts reported not started, %d started, of %d", skipped, started.Load(), len(hosts))
	}
}

func TestDuplicateHostsRunOnce(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	Run(context.Background(), []string{"a", "b", "a"}, 2, func(ctx context.Context, host string) error {
		mu.Lock()
		calls[host]++
		mu.Unlock()
		return nil
	}, nil)
	if diff := cmp.Diff(map[string]int{"a": 1, "b": 1}, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// script drives a Progress through a fixed run: no goroutines, fixed clock.
func script(p Progress) {
	p.Start(4)
	p.HostStarted("gpu-01")
	p.HostStarted("gpu-02")
	p.HostDone("gpu-01", nil, 1234*time.Millisecond)
	p.HostStarted("gpu-03")
	p.HostDone("gpu-02", &transport.HostError{Host: "gpu-02", Op: "host key", Err: errors.New("host key of gpu-02:22 is not known:\nit offered ssh-ed25519 SHA256:abc")}, time.Second)
	p.HostDone("gpu-03", errors.New("probe output truncated"), time.Second)
	p.HostDone("gpu-04", &NotStartedError{Err: context.Canceled}, 0)
	p.Finish()
}

func fixedClock() func() time.Time {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	calls := 0
	return func() time.Time {
		calls++
		return t0.Add(time.Duration(calls-1) * 2500 * time.Millisecond)
	}
}

func TestProgressOutput(t *testing.T) {
	tests := map[string]func(*bytes.Buffer) Progress{
		"lines": func(b *bytes.Buffer) Progress {
			l := NewLines(b, "probing")
			l.now = fixedClock()
			return l
		},
		"terminal": func(b *bytes.Buffer) Progress {
			tp := NewTerminal(b, -1, "probing")
			tp.now = fixedClock()
			// Narrow enough that the running list is cut.
			tp.getWidth = func() int { return 60 }
			return tp
		},
	}
	for name, mk := range tests {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			script(mk(&buf))
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), buf.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTerminalLinesFitTheWidth(t *testing.T) {
	var buf bytes.Buffer
	tp := NewTerminal(&buf, -1, "probing")
	tp.getWidth = func() int { return 30 }
	tp.Start(100)
	for _, h := range hostNames(40) {
		tp.HostStarted(h)
	}
	for _, frame := range bytes.Split(buf.Bytes(), []byte("\r\x1b[K")) {
		if len(frame) > 29 {
			t.Errorf("status line %q is wider than the terminal's 30 columns less one", frame)
		}
	}
}

func TestNewProgressPicksLinesWhenNotATerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, w := range map[string]any{"buffer": &bytes.Buffer{}, "file": f} {
		if _, ok := NewProgress(w.(interface{ Write([]byte) (int, error) }), "probing").(*Lines); !ok {
			t.Errorf("%s: NewProgress did not return plain lines", name)
		}
	}
}
