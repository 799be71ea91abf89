package nodesh_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/nodesh/nodeshtest"
)

// TestPreludeExitStatuses checks that prelude.sh sets each EXIT_* variable
// to the Go constant of the same meaning, and sets no other.
func TestPreludeExitStatuses(t *testing.T) {
	want := map[string]int{
		"EXIT_OS_ERROR":    nodesh.ExitOSError,
		"EXIT_BUSY":        nodesh.ExitBusy,
		"EXIT_NOT_OFFERED": nodesh.ExitNotOffered,
		"EXIT_INTERRUPTED": nodesh.ExitInterrupted,
		"EXIT_NOT_FOUND":   nodesh.ExitNotFound,
	}
	got := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^(EXIT_[A-Z_]+)=(.*)$`).FindAllStringSubmatch(nodesh.Prelude, -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil {
			t.Fatalf("prelude.sh: %s=%s is not a number", m[1], m[2])
		}
		got[m[1]] = n
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("prelude.sh's exit statuses differ from nodesh's constants (-Go +prelude.sh):\n%s", d)
	}
}

func TestPreludeShellcheck(t *testing.T) {
	nodeshtest.Shellcheck(t, map[string]string{"prelude.sh": nodesh.Prelude})
}

// TestScriptArgs checks that every value reaches the script as one word,
// whatever it holds, under each shell.
func TestScriptArgs(t *testing.T) {
	values := []string{"plain", "", "two words", "it's", `$(touch /tmp/x) ; "q" \ *`, "line\nbreak", "-n"}
	script := nodesh.Script(`for a in "$@"; do printf '[%s]\n' "$a"; done
exit "$EXIT_BUSY"
`, values)
	var want strings.Builder
	for _, v := range values {
		want.WriteString("[" + v + "]\n")
	}
	for _, sh := range nodeshtest.Shells() {
		t.Run(sh.Name, func(t *testing.T) {
			out, err := nodeshtest.Command(t, sh, script).Output()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != nodesh.ExitBusy {
				t.Fatalf("exit: %v, want status %d", err, nodesh.ExitBusy)
			}
			if d := cmp.Diff(want.String(), string(out)); d != "" {
				t.Errorf("arguments (-want +got):\n%s", d)
			}
		})
	}
}

// TestRunBinary checks that run_binary runs the file $PATH names, under
// each shell: busybox sh, as Debian builds it, runs its own sysctl applet
// for a bare "sysctl" even when $PATH has another one first (shown here,
// so the test fails if that ever changes and run_binary is no longer
// needed), and run_binary runs the one on $PATH.
func TestRunBinary(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "sysctl"), []byte("#!/bin/sh\necho \"stand-in sysctl $*\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A relative entry and a directory without it come first: both are
	// passed over.
	path := "relative:" + t.TempDir() + ":" + bin + ":" + os.Getenv("PATH")
	for _, sh := range nodeshtest.Shells() {
		t.Run(sh.Name, func(t *testing.T) {
			cmd := nodeshtest.Command(t, sh, nodesh.Script(`run_binary sysctl -q -p "$1"
echo "bare: $(command -v sysctl)"
run_binary gpuform-no-such-tool || echo "missing: $?"
`, []string{"/etc/sysctl.d/x.conf"}))
			cmd.Env = append(os.Environ(), "PATH="+path)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			bare := filepath.Join(bin, "sysctl")
			if sh.Name == "busybox-ash" {
				bare = "sysctl" // the applet
			}
			want := "stand-in sysctl -q -p /etc/sysctl.d/x.conf\nbare: " + bare + "\ngpuform: gpuform-no-such-tool: not found\nmissing: 127\n"
			if d := cmp.Diff(want, string(out)); d != "" {
				t.Errorf("output (-want +got):\n%s", d)
			}
		})
	}
}

// TestFail checks fail's message and status.
func TestFail(t *testing.T) {
	for _, sh := range nodeshtest.Shells() {
		t.Run(sh.Name, func(t *testing.T) {
			out, err := nodeshtest.Command(t, sh, nodesh.Script(`fail "$1" "$2"`+"\necho not reached\n", []string{"/etc/x", "changed"})).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit: %v, want status 1", err)
			}
			if d := cmp.Diff("gpuform: /etc/x changed\n", string(out)); d != "" {
				t.Errorf("output (-want +got):\n%s", d)
			}
		})
	}
}
