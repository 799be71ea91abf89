package facts_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/ssh"
)

// TestProbeOverSSH runs the probe through a real OpenSSH sshd on 127.0.0.1
// against every simulated root and compares the parsed facts with the same
// golden files as TestProbeSimRoots: what the probe sees must not depend on
// the transport. Each probe must be exactly one session on the connection.
func TestProbeOverSSH(t *testing.T) {
	state := t.TempDir()
	roots := map[string]string{}
	for _, name := range sim.Names() {
		root, err := sim.Materialize(name, state)
		if err != nil {
			t.Fatal(err)
		}
		roots[name] = root
	}
	// The stand-ins (rpm for the Rocky root) find their root through
	// GPUFORM_ROOT, so one root's bin directory serves every probe.
	anyRoot := roots[sim.Names()[0]]
	srv := sshtest.Start(t, sshtest.Options{Env: map[string]string{
		"PATH": filepath.Join(anyRoot, sim.BinDir) + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := ssh.Dial(ctx, srv.Host, ssh.Options{
		User: srv.User, Port: srv.Port, IdentityFiles: []string{srv.UserKeyFile},
		KnownHostsFiles: []string{srv.KnownHostsFile}, SSHConfigPath: ssh.NoConfig,
		Getenv: func(string) string { return "" },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sessions0 := srv.Sessions()
	for _, name := range sim.Names() {
		t.Run(name, func(t *testing.T) {
			n, err := facts.Probe(ctx, c, facts.Options{Reads: resource.Reads(), Root: roots[name]})
			if err != nil {
				t.Fatal(err)
			}
			want := readGolden(t, name)
			// The BMC is read only through an ipmitool inside the probed
			// root, and these stand-ins all come from one root's bin
			// directory: over SSH no root's BMC is read (the probe runs
			// no tool from outside the root), so the golden's is left out.
			if n.BMC != nil {
				t.Errorf("BMC read through a stand-in outside the root: %+v", n.BMC)
			}
			var g facts.Node
			if err := json.Unmarshal([]byte(want), &g); err != nil {
				t.Fatal(err)
			}
			if g.BMC != nil {
				g.BMC = nil
				want = string(marshal(t, &g))
			}
			if diff := cmp.Diff(want, string(marshal(t, normalise(n, name)))); diff != "" {
				t.Errorf("facts over SSH differ from testdata/golden/%s.json (-want +got):\n%s", name, diff)
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.Sessions()-sessions0 < len(roots) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := srv.Sessions() - sessions0; got != len(roots) {
		t.Errorf("%d probes used %d SSH sessions, want one each", len(roots), got)
	}
}

func readGolden(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
