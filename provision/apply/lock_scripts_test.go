package apply

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/nodesh/nodeshtest"
)

// TestLockScriptsShellcheck checks scripts/*.sh (the lock's, reboot's and
// the boot id's) as they are, and the lock's as they are sent (the
// prelude, the lock files as arguments, the script; the step lock in front
// of a step).
func TestLockScriptsShellcheck(t *testing.T) {
	files := map[string]string{
		"sent/lock_hold.sh":  holdScript(),
		"sent/lock_await.sh": awaitScript(),
		"sent/step.sh":       stepPrefix() + nodesh.Script("set -eu\necho \"$1\"\n", []string{"a step"}),
		"sent/reboot.sh":     nodesh.Script(rebootScript, nil),
	}
	for name, body := range map[string]string{"lock_hold.sh": lockHoldBody, "lock_await.sh": lockAwaitBody, "step_lock.sh": stepLockBody,
		"reboot.sh": rebootScript, "boot_id.sh": bootIDScript} {
		files[name] = body
	}
	nodeshtest.Shellcheck(t, files)
}

// TestLockScriptsUnderEachShell takes the lock under dash, bash and
// busybox ash on a scratch root: a second holder is told who holds it
// (EXIT_BUSY, "apply\tOWNER"); a step runs under its holder's lock, and not
// under another's.
func TestLockScriptsUnderEachShell(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		sshtest.Missing(t, "flock is not installed (apt-get install util-linux)")
	}
	for _, sh := range nodeshtest.Shells() {
		t.Run(sh.Name, func(t *testing.T) {
			root := t.TempDir()
			env := func(owner string) []string {
				return []string{"PATH=" + os.Getenv("PATH"), "GPUFORM_ROOT=" + root, "GPUFORM_LOCK_OWNER=" + owner, "GPUFORM_STEP=packages: install"}
			}
			const owner = "0011223344556677\talice@ctl\t2026-12-02T02:00:00Z"
			holder := nodeshtest.Command(t, sh, holdScript())
			holder.Env = env(owner)
			stdin, err := holder.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var holderErr strings.Builder
			holder.Stderr = &holderErr
			if err := holder.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				stdin.Close()
				if err := holder.Wait(); err != nil {
					t.Errorf("holder: %v %s", err, holderErr.String())
				}
				if b, _ := os.ReadFile(filepath.Join(root, LockPath)); len(b) != 0 {
					t.Errorf("the lock file still names a holder: %q", b)
				}
			}()
			await := nodeshtest.Command(t, sh, awaitScript())
			await.Env = env(owner)
			if out, err := await.CombinedOutput(); err != nil {
				t.Fatalf("await: %v %s (holder: %s)", err, out, holderErr.String())
			}

			second := nodeshtest.Command(t, sh, holdScript())
			second.Env = env("8899aabbccddeeff\tbob@ctl\t2026-12-02T02:01:00Z")
			out, err := second.Output()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != nodesh.ExitBusy {
				t.Fatalf("second holder: %v, want exit %d", err, nodesh.ExitBusy)
			}
			if d := cmp.Diff("apply\t"+owner+"\n", string(out)); d != "" {
				t.Errorf("second holder's answer (-want +got):\n%s", d)
			}

			step := stepPrefix() + nodesh.Script("set -eu\nprintf '%s\\n' \"$1\" \"$#\"\n", []string{"the step ran"})
			run := nodeshtest.Command(t, sh, step)
			run.Env = env(owner)
			if out, err := run.CombinedOutput(); err != nil || string(out) != "the step ran\n1\n" {
				t.Errorf("step under its lock: %v %q", err, out)
			}
			if b, _ := os.ReadFile(filepath.Join(root, StepLockPath)); !strings.Contains(string(b), "\tpackages: install\t"+owner+"\n") {
				t.Errorf("the step lock names %q", b)
			}
			other := nodeshtest.Command(t, sh, step)
			other.Env = env("8899aabbccddeeff\tbob@ctl\t2026-12-02T02:01:00Z")
			out, err = other.CombinedOutput()
			if !errors.As(err, &ee) || ee.ExitCode() != nodesh.ExitBusy || !strings.Contains(string(out), "this apply no longer holds") || strings.Contains(string(out), "the step ran") {
				t.Errorf("step under another's lock: %v %q", err, out)
			}
		})
	}
}
