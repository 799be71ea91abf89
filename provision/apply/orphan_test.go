package apply_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/apply"
	"github.com/gpuform/gpuform/provision/plan/plantest"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// TestOrphanedStepKeepsTheLock drops the controller's SSH connection while
// apt-get runs (what kill -9 of gpuform does to the host): the step goes on
// as an orphan, and a second apply started at once must fail fast naming
// its pid and step, not take the lock and run a second install next to it.
// Once the orphan ends, the next apply gets the lock.
func TestOrphanedStepKeepsTheLock(t *testing.T) {
	f := plantest.Start(t)
	cfg := loadSpec(t, "node.gpuform.hcl", []string{stale})
	p := mustPlan(t, f, cfg)
	ctx := context.Background()
	f.WriteFile(stale, "/var/lib/gpuform-sim/sleep/apt-get", "6\n")

	var mu sync.Mutex
	var conns []transport.Transport
	first := opts(f)
	first.Target.Connect = func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		tr, err := f.Connect(ctx, h)
		if err == nil {
			mu.Lock()
			conns = append(conns, tr)
			mu.Unlock()
		}
		return tr, err
	}
	done := make(chan *apply.Report, 1)
	go func() { done <- apply.Apply(ctx, cfg, p, first) }()

	// Wait until apt-get runs (it logs its call before sleeping), then
	// drop every connection of the first apply without releasing anything.
	deadline := time.Now().Add(60 * time.Second)
	for !hasCall(f, stale, "apt-get install") {
		if time.Now().After(deadline) {
			t.Fatalf("apt-get never ran; calls %q", f.Calls(stale))
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	rep1 := <-done
	if rep1.Hosts[0].Status != apply.Failed {
		t.Fatalf("first apply survived losing its connection: %+v", rep1.Hosts[0])
	}

	start := time.Now()
	rep2 := apply.Apply(ctx, cfg, p, opts(f))
	took := time.Since(start)
	h := rep2.Hosts[0]
	m := regexp.MustCompile(`still running on ` + regexp.QuoteMeta(stale) + `: pid (\d+) \(step \d+/\d+ \([a-z_]+: install [^)]*\)\), command: .+`).FindStringSubmatch(h.Error)
	if h.Status != apply.Failed || m == nil || !strings.Contains(h.Error, "started by test@ctl pid 1") {
		t.Fatalf("second apply next to an orphaned step: %+v", h)
	}
	if took > 15*time.Second {
		t.Errorf("second apply took %s to give up; a busy host must fail fast", took)
	}
	if h.StepsRun != 0 {
		t.Errorf("the second apply ran %d steps next to the orphan", h.StepsRun)
	}
	pid, _ := strconv.Atoi(m[1])
	// sshd runs on this machine: the pid named is a live process.
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("the busy message names pid %d, which is not running: %v", pid, err)
	}

	// The orphan ends; the next apply takes the lock and converges.
	os.Remove(filepath.Join(f.Root(stale), "var/lib/gpuform-sim/sleep/apt-get"))
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatalf("the orphaned step (pid %d) did not end", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	p3, err := f.Plan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep3 := apply.Apply(ctx, cfg, p3, opts(f))
	if h := rep3.Hosts[0]; !rep3.Converged() {
		t.Errorf("apply after the orphan ended: %+v", h)
	}
}

func hasCall(f *plantest.Fleet, host, prefix string) bool {
	for _, c := range f.Calls(host) {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

// TestUnusableLockFileFailsAtOnce: a lock file that cannot be used says
// why at once, in the shell's words, instead of a 30 s wait that ends in
// "lock holder did not start".
func TestUnusableLockFileFailsAtOnce(t *testing.T) {
	tests := map[string]struct {
		setup func(t *testing.T, lock string)
		want  string
	}{
		"directory": {
			setup: func(t *testing.T, lock string) {
				if err := os.MkdirAll(lock, 0o755); err != nil {
					t.Fatal(err)
				}
			},
			want: "Is a directory",
		},
		// /dev/full fails every write with ENOSPC, as a full /run does.
		"full disk": {
			setup: func(t *testing.T, lock string) {
				if err := os.Symlink("/dev/full", lock); err != nil {
					t.Fatal(err)
				}
			},
			want: "No space left on device",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := plantest.Start(t)
			cfg := loadSpec(t, "node.gpuform.hcl", []string{stale})
			p := mustPlan(t, f, cfg)
			lock := filepath.Join(f.Root(stale), "run/gpuform.lock")
			os.MkdirAll(filepath.Dir(lock), 0o755)
			tc.setup(t, lock)
			start := time.Now()
			rep := apply.Apply(context.Background(), cfg, p, opts(f))
			took := time.Since(start)
			h := rep.Hosts[0]
			if h.Status != apply.Failed || !strings.Contains(h.Error, "cannot take /run/gpuform.lock") || !strings.Contains(h.Error, tc.want) {
				t.Errorf("apply with an unusable lock file: %+v\nwant the cause %q", h, tc.want)
			}
			if took > 10*time.Second {
				t.Errorf("took %s to report an unusable lock file", took)
			}
			if h.StepsRun != 0 {
				t.Errorf("%d steps ran without the lock", h.StepsRun)
			}
		})
	}
}
