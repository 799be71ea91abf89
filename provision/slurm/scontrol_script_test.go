package slurm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/nodesh/nodeshtest"
	"github.com/gpuform/gpuform/provision/transport"
)

func TestScontrolScriptShellcheck(t *testing.T) {
	nodeshtest.Shellcheck(t, map[string]string{"scontrol.sh": scontrolScript})
}

// shellTransport runs each script under one shell with a recording
// scontrol stand-in first on PATH.
type shellTransport struct {
	t   *testing.T
	sh  nodeshtest.Shell
	bin string
}

func (s shellTransport) Host() string { return "gpu001" }
func (s shellTransport) Close() error { return nil }
func (s shellTransport) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	c := nodeshtest.Command(s.t, s.sh, cmd.Script)
	c.Env = []string{"PATH=" + s.bin + ":" + os.Getenv("PATH")}
	var stdout, stderr strings.Builder
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	res := transport.Result{Stdout: []byte(stdout.String()), Stderr: []byte(stderr.String())}
	if c.ProcessState != nil {
		res.ExitCode = c.ProcessState.ExitCode()
		err = nil
	}
	return res, err
}

// TestScontrolScriptUnderEachShell drives every Client action through
// scontrol.sh under dash, bash and busybox ash, and checks the arguments
// scontrol got: a reason with quotes and a "$(...)" stays one word.
func TestScontrolScriptUnderEachShell(t *testing.T) {
	for _, sh := range nodeshtest.Shells() {
		t.Run(sh.Name, func(t *testing.T) {
			nodeshtest.Need(t, sh)
			log := filepath.Join(t.TempDir(), "calls")
			bin := t.TempDir()
			stand := "#!/bin/sh\n{ printf scontrol; for a in \"$@\"; do printf ' [%s]' \"$a\"; done; echo; } >>" + transport.Quote(log) + "\n" +
				"case $* in '-o show node gpu001' | '-o show nodes') echo 'NodeName=gpu001 Arch=x86_64 State=IDLE' ;; esac\n"
			if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte(stand), 0o755); err != nil {
				t.Fatal(err)
			}
			c := Client{Tr: shellTransport{t, sh, bin}, Name: "gpu001", Become: false}
			ctx := context.Background()
			reason := `gpuform: it's "$(reboot)" time`
			for _, err := range []error{
				c.Drain(ctx, reason), c.SetReason(ctx, reason), c.SetComment(ctx, "a  note"),
				c.Resume(ctx), c.Reboot(ctx, reason),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			if nodes, err := c.Fleet(ctx); err != nil || len(nodes) != 1 || nodes[0].Name != "gpu001" {
				t.Fatalf("fleet: %v %+v", err, nodes)
			}
			if n, err := c.Show(ctx); err != nil || n.Name != "gpu001" {
				t.Fatalf("show: %v %+v", err, n)
			}
			b, _ := os.ReadFile(log)
			want := "scontrol [update] [NodeName=gpu001] [State=DRAIN] [Reason=" + reason + "]\n" +
				"scontrol [update] [NodeName=gpu001] [Reason=" + reason + "]\n" +
				"scontrol [update] [NodeName=gpu001] [Comment=a note]\n" +
				"scontrol [update] [NodeName=gpu001] [State=RESUME]\n" +
				"scontrol [reboot] [ASAP] [nextstate=RESUME] [reason=" + reason + "] [gpu001]\n" +
				"scontrol [-o] [show] [nodes]\n" +
				"scontrol [-o] [show] [node] [gpu001]\n"
			if d := cmp.Diff(want, string(b)); d != "" {
				t.Errorf("scontrol's arguments (-want +got):\n%s", d)
			}
		})
	}
}
