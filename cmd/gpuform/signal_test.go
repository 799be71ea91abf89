package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/sshtest"
)

// builtGpuform is the binary buildGpuform makes, once per run of the
// package's tests: linking it takes seconds on a loaded CI, and every test
// that runs it wants the same binary. TestMain removes it.
var builtGpuform struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// buildGpuform builds the real binary, with the test-only crash triggers
// (crash_on.go), into a temporary directory, the first time a test asks,
// and returns that binary to every test after it.
func buildGpuform(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the gpuform binary")
	}
	b := &builtGpuform
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "gpuform-test-bin-")
		if b.err != nil {
			return
		}
		bin := filepath.Join(b.dir, "gpuform")
		out, err := exec.Command("go", "build", "-tags", "gpuform_crashtest", "-o", bin, ".").CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		b.bin = bin
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// removeBuiltGpuform removes what buildGpuform built, after the tests.
func removeBuiltGpuform() {
	if builtGpuform.dir != "" {
		os.RemoveAll(builtGpuform.dir)
	}
}

// proc is a running gpuform.
type proc struct {
	cmd      *exec.Cmd
	out, err sshtest.LockedBuffer
	done     chan struct{}
}

func startGpuform(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), append([]string{"NO_COLOR=1"}, env...)...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// waitStderr waits until the process has written want on stderr.
func (p *proc) waitStderr(t *testing.T, want string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(p.err.String(), want) {
		select {
		case <-p.done:
			t.Fatalf("gpuform exited (%v) before writing %q\nstdout:\n%s\nstderr:\n%s", p.cmd.ProcessState, want, p.out.String(), p.err.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q on stderr within %s\nstderr:\n%s", want, d, p.err.String())
		}
	}
}

// wait waits at most d for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("gpuform still running %s after the signal\nstdout:\n%s\nstderr:\n%s", d, p.out.String(), p.err.String())
		return 0
	}
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// TestSignals sends SIGINT and SIGTERM to a real gpuform process: validate
// stops on the first; plan and apply stop gracefully on the first (a
// blocked probe is cancelled, a running step finishes and the lock is
// released); a second signal ends apply at once, naming the host and the
// step left in flight. Time bounds leave room for a loaded 2-core CI.
func TestSignals(t *testing.T) {
	bin := buildGpuform(t)

	t.Run("validate stops on the first signal", func(t *testing.T) {
		// A -var-file that is a FIFO nobody writes: an input that never
		// ends.
		fifo := filepath.Join(t.TempDir(), "never.gpuvars.hcl")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		p := startGpuform(t, bin, nil, "validate", "-var-file", fifo, "testdata/planapply")
		time.Sleep(500 * time.Millisecond)
		p.signal(t, syscall.SIGINT)
		if code := p.wait(t, 10*time.Second); code != ExitFailed || !strings.Contains(p.err.String(), "Interrupt received: stopped.") {
			t.Errorf("validate after SIGINT: exit %d\n%s", code, p.err.String())
		}
	})

	// `timeout 60 gpuform plan -var-file FIFO` sends one SIGTERM: while
	// plan, apply, verify, facts or lock only read the spec, nothing is in
	// flight to finish, and that signal used to be taken as "stop
	// gracefully" by a load that cannot be cancelled, so they hung on.
	for _, cmd := range []string{"plan", "apply", "verify", "facts", "lock"} {
		t.Run(cmd+" stops on the first signal while loading the spec", func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "never.gpuvars.hcl")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			p := startGpuform(t, bin, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, cmd, "-var-file", fifo, "testdata/planapply")
			time.Sleep(500 * time.Millisecond)
			p.signal(t, syscall.SIGTERM)
			if code := p.wait(t, 10*time.Second); code != ExitFailed || !strings.Contains(p.err.String(), "SIGTERM received: stopped.") {
				t.Errorf("%s after SIGTERM while loading: exit %d\n%s", cmd, code, p.err.String())
			}
		})
	}

	t.Run("plan cancels a blocked probe on the first signal", func(t *testing.T) {
		state := t.TempDir()
		env := []string{"GPUFORM_SIM_STATE=" + state}
		if code, out, errOut := runPA(t, env, "", "plan", "testdata/planapply"); code != ExitReport && code != ExitOK {
			t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
		}
		hangProbe(t, filepath.Join(state, "hgx-h100-stale"))
		p := startGpuform(t, bin, env, "plan", "testdata/planapply")
		time.Sleep(time.Second)
		p.signal(t, syscall.SIGTERM)
		code := p.wait(t, 15*time.Second)
		if code != ExitFailed || !strings.Contains(p.err.String(), "SIGTERM received: stopping.") || !strings.Contains(p.err.String(), "interrupted while probing hosts") {
			t.Errorf("plan after SIGTERM: exit %d\n%s", code, p.err.String())
		}
	})

	// apt-get of the first step sleeps; returns the env and the sleep file.
	slowApt := func(t *testing.T, secs string) ([]string, string) {
		state := t.TempDir()
		env := []string{"GPUFORM_SIM_STATE=" + state}
		if code, out, errOut := runPA(t, env, "", "plan", "testdata/planapply"); code != ExitOK {
			t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
		}
		root := filepath.Join(state, "hgx-h100-stale")
		sleep := filepath.Join(root, "var/lib/gpuform-sim/sleep/apt-get")
		os.MkdirAll(filepath.Dir(sleep), 0o755)
		if err := os.WriteFile(sleep, []byte(secs+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { killOrphanStep(t, root) })
		return env, sleep
	}

	t.Run("apply finishes the running step on the first signal", func(t *testing.T) {
		env, sleep := slowApt(t, "3")
		p := startGpuform(t, bin, env, "apply", "-auto-approve", "testdata/planapply")
		p.waitStderr(t, "step 1/", 60*time.Second)
		p.signal(t, syscall.SIGINT)
		code := p.wait(t, 60*time.Second)
		if code != ExitFailed || !strings.Contains(p.err.String(), "Interrupt received: stopping.") || !strings.Contains(p.out.String(), "interrupted after 1 of ") {
			t.Fatalf("apply after SIGINT: exit %d\nstdout:\n%s\nstderr:\n%s", code, p.out.String(), p.err.String())
		}
		// The step ran to its end and the lock was released: the next
		// apply goes through.
		os.Remove(sleep)
		if code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", "testdata/planapply"); code != ExitOK {
			t.Errorf("apply after the interrupted one: exit %d\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("apply exits at once on the second signal", func(t *testing.T) {
		env, _ := slowApt(t, "120")
		p := startGpuform(t, bin, env, "apply", "-auto-approve", "testdata/planapply")
		p.waitStderr(t, "step 1/", 60*time.Second)
		p.signal(t, syscall.SIGINT)
		p.waitStderr(t, "Interrupt received: stopping.", 10*time.Second)
		start := time.Now()
		p.signal(t, syscall.SIGTERM)
		code := p.wait(t, 10*time.Second)
		took := time.Since(start)
		want := "sim://hgx-h100-stale: step 1/"
		if code != ExitFailed || !strings.Contains(p.err.String(), "SIGTERM received again: exiting at once.") || !strings.Contains(p.err.String(), "Left in flight") || !strings.Contains(p.err.String(), want) {
			t.Errorf("apply after a second signal: exit %d, want 1 and the host and step left in flight (%q)\n%s", code, want, p.err.String())
		}
		if took > 5*time.Second {
			t.Errorf("apply took %s to exit after the second signal", took)
		}
	})
}

// killOrphanStep ends a step a test left running in a simulated root: the
// step lock names the step's shell, the leader of its process group. It
// then waits until no process holds the apply lock or the step lock: the
// apply lock's holder, seeing its gpuform gone, truncates the lock file
// as it exits, which recreates it under run/ if the test's TempDir
// cleanup has just removed it (and that cleanup then fails, "directory
// not empty").
func killOrphanStep(t *testing.T, root string) {
	if b, err := os.ReadFile(filepath.Join(root, "run/gpuform.step.lock")); err == nil {
		pid, err := strconv.Atoi(strings.SplitN(string(b), "\t", 2)[0])
		if err == nil && pid > 1 {
			syscall.Kill(-pid, syscall.SIGKILL)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for _, lock := range []string{"run/gpuform.step.lock", "run/gpuform.lock"} {
		awaitUnlocked(t, filepath.Join(root, lock), 30*time.Second)
	}
}

// awaitUnlocked waits until no process holds an flock on path (one that
// does not exist is not held).
func awaitUnlocked(t *testing.T, path string, d time.Duration) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s is still locked %s after the test's gpuform ended", path, d)
			return
		}
	}
}

// TestCrashExitStatus: a runtime fatal error or an unrecovered panic ends
// gpuform by SIGABRT (134 in a shell), never with 0 or 2, which plan
// -detailed-exitcode and lint give meanings to. The crash triggers exist
// only in binaries built with -tags gpuform_crashtest.
func TestCrashExitStatus(t *testing.T) {
	t.Parallel()
	bin := buildGpuform(t)
	for _, kind := range []string{"stack-overflow", "goroutine-panic"} {
		t.Run(kind, func(t *testing.T) {
			// ulimit -c 0: no core file in the package directory.
			cmd := exec.Command("/bin/sh", "-c", `ulimit -c 0; "$0" "$@"; echo "status=$?"`, bin, "plan", "-detailed-exitcode", "testdata/planapply")
			cmd.Env = append(os.Environ(), "GPUFORM_TEST_CRASH="+kind, "GPUFORM_SIM_STATE="+t.TempDir())
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(out.String()); got != "status=134" {
				t.Errorf("crash (%s): shell saw %q, want status=134 (SIGABRT)\n%s", kind, got, tail(errb.String(), 400))
			}
		})
	}
	// Without a shell in between: killed by SIGABRT, no exit status at all.
	cmd := exec.Command("/bin/sh", "-c", `ulimit -c 0; exec "$0" "$@"`, bin, "version")
	cmd.Env = append(os.Environ(), "GPUFORM_TEST_CRASH=stack-overflow")
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("crash: %v", err)
	}
	if ws := ee.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGABRT {
		t.Errorf("crash: %v, want killed by SIGABRT", ee)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
