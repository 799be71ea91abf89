package apply_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/apply"
	"github.com/gpuform/gpuform/provision/plan/plantest"
	"github.com/gpuform/gpuform/provision/resource"
)

// A connection dropped between writing the GRUB drop-in and update-grub
// finishing (sshd killed mid-step) fails the host cleanly; the next apply
// sees that the drop-in was never put into effect and runs update-grub
// again, instead of taking the file's presence for convergence.
func TestConnectionDroppedMidStepConvergesOnNextApply(t *testing.T) {
	f := plantest.Start(t)
	cfg := loadSpec(t, "node.gpuform.hcl", []string{stale})
	root := f.Root(stale)
	bin := filepath.Join(root, "usr/lib/gpuform-sim/bin/update-grub")
	real, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(root, "update-grub-started")
	// The hung step records its pid, so the test can wait for the drop to
	// end it: it holds the step lock until it is gone.
	hang := "#!/bin/sh\necho $$ >\"$GPUFORM_ROOT/update-grub-started\"\nexec sleep 60\n"
	if err := os.WriteFile(bin, []byte(hang), 0o755); err != nil {
		t.Fatal(err)
	}

	p := mustPlan(t, f, cfg)
	done := make(chan *apply.Report, 1)
	go func() { done <- apply.Apply(context.Background(), cfg, p, opts(f)) }()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("update-grub never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.Server.Kill()
	var rep *apply.Report
	select {
	case rep = <-done:
	case <-time.After(time.Minute):
		t.Fatal("apply hung after the connection dropped")
	}
	if h := rep.Hosts[0]; h.Status != apply.Failed || !strings.HasPrefix(h.FailedStep, "kernel_cmdline: ") {
		t.Fatalf("apply after the drop: %+v", h)
	}
	marker := filepath.Join(root, strings.TrimPrefix(resource.PendingMarker(resource.GrubDropIn), "/"))
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("no pending marker after the interrupted step: %v", err)
	}
	if l := leftovers(t, root); len(l) != 0 {
		t.Errorf("temporary files left behind: %v", l)
	}

	// The connection's end kills the hung step (SIGHUP to its session);
	// on a loaded machine that can land after apply has returned, and
	// until then the step lock rightly refuses a second apply.
	if b, err := os.ReadFile(started); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			for gone := time.Now().Add(30 * time.Second); running(pid); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(gone) {
					t.Fatalf("the hung step (pid %d) outlived its dropped connection by 30s", pid)
				}
			}
		}
	}
	if err := os.WriteFile(bin, real, 0o755); err != nil {
		t.Fatal(err)
	}
	f.Server.Restart()
	p = mustPlan(t, f, cfg)
	found := false
	for _, rc := range p.Hosts[0].ResourceChanges {
		if rc.Resource == resource.KernelCmdline {
			found = true
			if rc.Action == resource.NoOp || rc.Before["in effect"].Text != "false" || rc.After["in effect"].Text != "true" {
				t.Fatalf("kernel_cmdline after the drop: %v %v -> %v, want an update putting the drop-in into effect", rc.Action, rc.Before, rc.After)
			}
		}
	}
	if !found {
		t.Fatal("no kernel_cmdline change planned after the drop")
	}
	if rep := apply.Apply(context.Background(), cfg, p, opts(f)); !rep.Converged() {
		t.Fatalf("second apply: %+v", rep.Hosts[0])
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("pending marker still there after update-grub ran")
	}
	if grub := f.ReadFile(stale, "/boot/grub/grub.cfg"); !strings.Contains(grub, "iommu=pt") {
		t.Errorf("grub.cfg was never regenerated:\n%s", grub)
	}
	if p := mustPlan(t, f, cfg); p.HasChanges() {
		t.Error("not converged after the second apply")
	}
}

// running reports whether pid is a live process: an exited one that
// nobody reaped yet (a zombie, state Z) has closed its files, the step
// lock included.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
