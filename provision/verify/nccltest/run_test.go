package nccltest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/nodesh/nodeshtest"
	"github.com/gpuform/gpuform/provision/transport"
)

// shellTransport runs scripts with the local /bin/sh, so RunTest's script,
// quoting, timeout(1) and exit statuses are exercised for real.
type shellTransport struct{ path string }

func (s shellTransport) Host() string { return "localhost" }
func (s shellTransport) Close() error { return nil }
func (s shellTransport) Run(ctx context.Context, c transport.Command) (transport.Result, error) {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", c.Script)
	cmd.Env = append(os.Environ(), "PATH="+s.path)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := transport.Result{Stdout: out.Bytes(), Stderr: errb.Bytes()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		return res, ctx.Err()
	case err != nil:
		return res, err
	}
	return res, nil
}

func TestRunTest(t *testing.T) {
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Skip("coreutils timeout(1) not installed")
	}
	bin := t.TempDir()
	fixture, _ := filepath.Abs(filepath.Join("testdata", "all_reduce_perf-8xH100-nvswitch-1node.txt"))
	failure, _ := filepath.Abs(filepath.Join("testdata", "all_reduce_perf-2xRTX5090-pcie-nccl-failure.txt"))
	scripts := map[string]string{
		// Prints a real output and records its arguments and environment.
		"all_reduce_perf": "#!/bin/sh\necho \"$NCCL_ALGO $*\" > " + filepath.Join(bin, "args") + "\ncat " + fixture + "\n",
		// nccl-tests exits 3 (NCCL error) after the failure lines.
		"broken_perf": "#!/bin/sh\ncat " + failure + "\nexit 3\n",
		"hung_perf":   "#!/bin/sh\nsleep 30\n",
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tr := shellTransport{path: bin + ":/usr/bin:/bin"}
	tests := []struct {
		name, cmd string
		timeout   time.Duration
		pass      bool
		reason    string
	}{
		{"healthy", "NCCL_ALGO=RING all_reduce_perf -b 8 -e '4G' -g 8", 10 * time.Second, true, ""},
		{"missing binary", "no_such_perf -g 8", 10 * time.Second, false, "no_such_perf not found on the node"},
		{"nccl error", "broken_perf -g 2", 10 * time.Second, false, "exit status 3 (NCCL error)"},
		{"hang", "hung_perf", time.Second, false, "timed out after 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := RunTest(context.Background(), tr, tt.cmd, tt.timeout)
			if err != nil {
				t.Fatal(err)
			}
			v := res.Judge(400)
			if v.Pass != tt.pass {
				t.Fatalf("verdict %+v (result %+v)", v, res)
			}
			if tt.reason != "" && !strings.Contains(strings.Join(v.Reasons, "\n"), tt.reason) {
				t.Errorf("reasons %q, want %q", v.Reasons, tt.reason)
			}
		})
	}
	args, err := os.ReadFile(filepath.Join(bin, "args"))
	if err != nil || strings.TrimSpace(string(args)) != "RING -b 8 -e 4G -g 8" {
		t.Errorf("the test saw %q (%v)", args, err)
	}
	if _, err := RunTest(context.Background(), tr, "all_reduce_perf; reboot", time.Second); err == nil {
		t.Error("shell syntax accepted")
	}
}

// TestRunTestNoTimeout: a node without timeout(1) fails with exit 127 too;
// the message must not blame the test binary, which is there.
func TestRunTestNoTimeout(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "all_reduce_perf"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, cmd, want, not string
		notInstalled               bool
	}{
		{"binary there, no timeout", bin, "all_reduce_perf -g 1", "timeout", "all_reduce_perf not found", false},
		{"binary missing", bin, "no_such_perf -g 1", "no_such_perf not found", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := RunTest(context.Background(), shellTransport{path: tt.path}, tt.cmd, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 127 || !strings.Contains(res.Failure, tt.want) || (tt.not != "" && strings.Contains(res.Failure, tt.not)) {
				t.Errorf("exit %d, failure %q: want %q, not %q", res.ExitCode, res.Failure, tt.want, tt.not)
			}
			// Only the test's own program missing may be excused by
			// verify { optional = ["nccl_tests"] }.
			if res.NotInstalled != tt.notInstalled {
				t.Errorf("NotInstalled = %v, want %v", res.NotInstalled, tt.notInstalled)
			}
		})
	}
}

// TestRunScript checks scripts/nccl_test.sh with shellcheck, as it is and
// as sent, and runs it under dash, bash and busybox ash: the environment
// assignment and each word reach the program as they are, and a missing
// program is named with EXIT_NOT_FOUND.
func TestRunScript(t *testing.T) {
	sent := func(words ...string) string { return nodesh.Script(runScript, words) }
	nodeshtest.Shellcheck(t, map[string]string{
		"nccl_test.sh":      runScript,
		"sent/nccl_test.sh": sent("60", "all_reduce_perf", "NCCL_ALGO=RING", "all_reduce_perf", "-b", "8"),
	})
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "all_reduce_perf"), []byte("#!/bin/sh\nprintf '%s\\n' \"$NCCL_ALGO\" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sh := range nodeshtest.Shells() {
		t.Run(sh.Name, func(t *testing.T) {
			cmd := nodeshtest.Command(t, sh, sent("60", "all_reduce_perf", "NCCL_ALGO=RING", "all_reduce_perf", "-b", "8", "-e", "4G; reboot"))
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
			out, err := cmd.CombinedOutput()
			if want := "RING\n-b\n8\n-e\n4G; reboot\n"; err != nil || string(out) != want {
				t.Errorf("%v: %q, want %q", err, out, want)
			}
			cmd = nodeshtest.Command(t, sh, sent("60", "no_such_perf", "no_such_perf"))
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
			out, _ = cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != nodesh.ExitNotFound || string(out) != "gpuform: no_such_perf: command not found\n" {
				t.Errorf("missing program: exit %d %q", code, out)
			}
		})
	}
}
