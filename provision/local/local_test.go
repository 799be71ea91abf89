package local_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/transport"
)

// The local transport must satisfy the interface every caller codes against.
var _ transport.Transport = (*local.Transport)(nil)

func TestRun(t *testing.T) {
	tests := map[string]struct {
		cmd        transport.Command
		opts       []local.Option
		wantOut    string
		wantErrOut string
		wantCode   int
	}{
		"stdout and exit 0": {cmd: transport.Command{Script: "echo hello"}, wantOut: "hello\n"},
		"stderr and exit code": {
			cmd:        transport.Command{Script: "echo oops >&2; exit 3"},
			wantErrOut: "oops\n", wantCode: 3,
		},
		"stdin": {cmd: transport.Command{Script: "tr a-z A-Z", Stdin: strings.NewReader("abc")}, wantOut: "ABC"},
		// Values reach the command byte for byte, shell metacharacters included.
		"env": {
			cmd:     transport.Command{Script: `printf '%s|%s' "$A" "$B"`, Env: map[string]string{"A": "x y", "B": "$(id) 'q'"}},
			wantOut: "x y|$(id) 'q'",
		},
		"command env wins over transport env": {
			cmd:     transport.Command{Script: `printf %s "$A"`, Env: map[string]string{"A": "cmd"}},
			opts:    []local.Option{local.WithEnv(map[string]string{"A": "transport"})},
			wantOut: "cmd",
		},
		"killed by signal": {cmd: transport.Command{Script: "kill -9 $$"}, wantCode: -1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res, err := local.New("localhost", tc.opts...).Run(context.Background(), tc.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Stdout) != tc.wantOut || string(res.Stderr) != tc.wantErrOut || res.ExitCode != tc.wantCode {
				t.Errorf("got out %q err %q code %d, want %q %q %d", res.Stdout, res.Stderr, res.ExitCode, tc.wantOut, tc.wantErrOut, tc.wantCode)
			}
		})
	}
}

func TestBadEnvName(t *testing.T) {
	_, err := local.New("h").Run(context.Background(), transport.Command{Script: "true", Env: map[string]string{"A;rm": "x"}})
	var he *transport.HostError
	if !errors.As(err, &he) || he.Host != "h" || !strings.Contains(err.Error(), "not a shell identifier") {
		t.Errorf("err = %v, want a HostError about the name", err)
	}
}

// TestCancelKillsProcessGroup starts a command whose child ignores the
// shell's death; cancelling must end the child too.
func TestCancelKillsProcessGroup(t *testing.T) {
	pidFile := t.TempDir() + "/pid"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := local.New("h").Run(ctx, transport.Command{Script: "sleep 300 & echo $! > " + pidFile + "; wait"})
		done <- err
	}()
	var pid int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(pidFile)
		if err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
	}
	if pid == 0 {
		t.Fatal("command did not start")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	// The child was in the killed group; give the kernel a moment to reap.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(b), ") Z ") {
			return // a zombie is dead; only its parent's reaping is left
		}
	}
	t.Errorf("child %d survived cancellation", pid)
}

func TestBecome(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("Become runs sudo -n when not root; this machine's sudo policy is not the test's to assume")
	}
	res, err := local.New("h").Run(context.Background(), transport.Command{Script: "id -u; printf %s \"$X\"", Become: true, Env: map[string]string{"X": "v"}})
	if err != nil || string(res.Stdout) != "0\nv" {
		t.Errorf("as root, Become ran %q, %v; want it run directly as uid 0", res.Stdout, err)
	}
}

// TestBecomeSudo runs Become through a fake sudo that records how it was
// called: non-interactive (-n), the environment carried inside the script
// because sudo resets it, and a password requirement reported as such.
func TestBecomeSudo(t *testing.T) {
	bin := t.TempDir()
	fake := `#!/bin/sh
echo "sudo $1 $2 $3 $4" >&2
[ "$1" = -n ] || exit 9
if [ -n "$FAKE_SUDO_PASSWORD" ]; then echo "sudo: a password is required" >&2; exit 1; fi
shift 2
exec "$@"
`
	if err := os.WriteFile(bin+"/sudo", []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	tr := local.New("h")
	local.NotRoot(tr)
	res, err := tr.Run(context.Background(), transport.Command{Script: `printf '%s' "$X"`, Become: true, Env: map[string]string{"X": "a 'b'"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "a 'b'" || !strings.HasPrefix(string(res.Stderr), "sudo -n -- /bin/sh -c") {
		t.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	t.Setenv("FAKE_SUDO_PASSWORD", "1")
	_, err = tr.Run(context.Background(), transport.Command{Script: "true", Become: true})
	var he *transport.HostError
	if !errors.As(err, &he) || he.Op != "become" || !strings.Contains(err.Error(), "needs a password") {
		t.Errorf("password required: err = %v", err)
	}
}

// TestEndlessOutput: a command that prints without end, on either stream,
// is stopped once it passes its limit and fails with an output error; it
// is neither waited for nor cut off silently.
func TestEndlessOutput(t *testing.T) {
	tests := map[string]struct{ script, stream string }{
		"stdout": {script: "yes gpuform", stream: "stdout"},
		"stderr": {script: "yes gpuform >&2", stream: "stderr"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			start := time.Now()
			res, err := local.New("localhost").Run(ctx, transport.Command{Script: tc.script})
			var he *transport.HostError
			var le *transport.OutputLimitError
			if !errors.As(err, &he) || he.Op != "output" || !errors.As(err, &le) || le.Stream != tc.stream {
				t.Fatalf("Run(%q) = %v, want an output error on %s", tc.script, err, tc.stream)
			}
			if ctx.Err() != nil {
				t.Fatalf("Run(%q) returned only after 60s", tc.script)
			}
			if n := len(res.Stdout) + len(res.Stderr); n > transport.MaxStdout+transport.StderrHead+transport.StderrTail+100 {
				t.Errorf("kept %d bytes of output", n)
			}
			t.Logf("stopped after %s", time.Since(start))
		})
	}
}
