package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/apply"
	"github.com/gpuform/gpuform/provision/sim"
)

// TestApplyLockTimeout holds the host lock as another apply would: apply
// fails at once by default, fails after -lock-timeout when the lock stays
// held, and goes on once the other apply lets go within it.
func TestApplyLockTimeout(t *testing.T) {
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	const host = "sim://hgx-h100-stale"
	root, err := sim.MaterializeHost(host, state)
	if err != nil {
		t.Fatal(err)
	}
	tr := sim.New(host, root)
	defer tr.Close()
	ctx := context.Background()
	other, err := apply.AcquireLock(ctx, tr, "alice@ctl-2 pid 4242", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			other.Release()
		}
	}()
	busy := "another gpuform apply holds the lock on " + host

	start := time.Now()
	code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", "testdata/planapply")
	if code != ExitFailed || !strings.Contains(out+errOut, busy) || strings.Contains(out+errOut, "waited") {
		t.Fatalf("default: exit %d, want 1 at once naming the holder\n%s\n%s", code, out, errOut)
	}
	fast := time.Since(start)

	start = time.Now()
	code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", "-lock-timeout", "3s", "testdata/planapply")
	waited := time.Since(start)
	if code != ExitFailed || !strings.Contains(out+errOut, busy) || !strings.Contains(out+errOut, "waited 3s, the -lock-timeout") {
		t.Fatalf("-lock-timeout 3s, lock held: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "waiting up to 3s for the lock") {
		t.Errorf("no progress line says apply waits for the lock:\n%s", errOut)
	}
	// A run that waited out 3s cannot end sooner than 3s after it
	// started, and must take clearly longer than the run that gave up at
	// once. The margin is 1s, not the full 3s: the two runs' own start-up
	// differs by more than a second when other test packages load the
	// machine.
	if waited < 3*time.Second || waited < fast+time.Second {
		t.Errorf("-lock-timeout 3s gave up after %s (without it: %s)", waited, fast)
	}

	// The other apply finishes two seconds in: this one takes over.
	go func() {
		time.Sleep(2 * time.Second)
		other.Release()
	}()
	released = true
	code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", "-lock-timeout=1m", "testdata/planapply")
	if code != ExitOK || !strings.Contains(out, "1 reboot pending") {
		t.Fatalf("-lock-timeout 1m, lock released within it: exit %d\n%s\n%s", code, out, errOut)
	}

	code, _, errOut = runPA(t, env, "", "apply", "-auto-approve", "-lock-timeout", "5", "testdata/planapply")
	if code != ExitFailed || !strings.Contains(errOut, "lock-timeout") {
		t.Errorf("-lock-timeout 5 (no unit): exit %d\n%s", code, errOut)
	}
}
