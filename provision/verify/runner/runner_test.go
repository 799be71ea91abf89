package runner

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"go/parser"
	"go/token"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh"

	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/spec"
)

// TestBudgetCoversConnecting checks that the tier's budget is hard for the
// whole host: a host that accepts the TCP connection and then says nothing
// (a hung sshd, a wedged node) fails when the budget runs out, not when
// the much longer connect timeout does.
func TestBudgetCoversConnecting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var held []net.Conn
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // accepted, never answered
			mu.Unlock()
		}
	}()

	dir := t.TempDir()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(key, "")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}

	port := ln.Addr().(*net.TCPAddr).Port
	node := &spec.Node{Name: "n"}
	targets := []target.Host{{Host: spec.Host{Name: "127.0.0.1", Port: port, User: "ops"}, Node: node}}
	o := Options{
		KB:     testKB,
		Tier:   verify.TierProbe,
		Budget: 500 * time.Millisecond,
		Target: target.Options{Parallelism: 1, Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
			return connect.Open(ctx, h, connect.Options{
				ConnectTimeout:  time.Minute,
				SSHConfigPath:   "none",
				IdentityFiles:   []string{keyFile},
				KnownHostsFiles: []string{filepath.Join(dir, "known_hosts")},
				Getenv:          func(string) string { return "" },
			})
		}},
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	doc := Run(ctx, targets, o)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("verify took %s; the 500ms budget did not bound connecting", took)
	}
	if doc.OK() || len(doc.Hosts) != 1 || len(doc.Hosts[0].Checks) != 1 {
		t.Fatalf("report: %+v", doc)
	}
	c := doc.Hosts[0].Checks[0]
	if c.ID != "host.reachable" || c.Status != verify.StatusFail || !strings.Contains(c.Message, "tier's budget of 500ms ran out") {
		t.Errorf("check: %+v", c)
	}
}

// TestSimProfilesOfferKnownMocks: every simulated profile offers, through
// the transport capability verify asks for, an NVML mock system that
// nvmlfacts has.
func TestSimProfilesOfferKnownMocks(t *testing.T) {
	for _, name := range sim.Names() {
		t.Run(name, func(t *testing.T) {
			var tr transport.Transport = sim.New("sim://"+name, t.TempDir())
			m, ok := tr.(transport.NVMLMocker)
			if !ok {
				t.Fatal("a simulated node offers no NVML mock")
			}
			mock, err := m.NVMLMock()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(nvmlfacts.MockNames(), mock.System) || !mock.FollowsDriver {
				t.Errorf("mock %+v: not one of %v, or does not follow the driver", mock, nvmlfacts.MockNames())
			}
		})
	}
}

// TestLocalGoesThroughConnect: --local reaches this machine through the
// Connector like every host (it used to construct a local transport
// itself), and NVML comes from the mock the transport offers, whatever
// transport it is.
func TestLocalGoesThroughConnect(t *testing.T) {
	var dialled []string
	o := Options{KB: testKB, Tier: verify.TierProbe, Local: true, Target: target.Options{Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		dialled = append(dialled, h.Name)
		return transport.WithNVMLMock(local.New(h.Name), transport.NVMLMock{System: nvmlfacts.MockDGXH100}), nil
	}}}
	node := &spec.Node{Name: "n"}
	doc := Run(context.Background(), []target.Host{{Host: spec.Host{Name: "local://here"}, Node: node}}, o)
	if len(dialled) != 1 || dialled[0] != "local://here" {
		t.Fatalf("connector dialled %v, want local://here once", dialled)
	}
	if len(doc.Hosts) != 1 {
		t.Fatalf("report: %+v", doc)
	}
	found := false
	for _, c := range doc.Hosts[0].Checks {
		if c.ID == "nvml.facts" {
			found = true
			type source struct {
				Status   verify.Status
				Observed string
			}
			want := source{verify.StatusPass, "simulated NVML (" + nvmlfacts.MockDGXH100 + ")"}
			if diff := cmp.Diff(want, source{c.Status, c.Observed}); diff != "" {
				t.Errorf("nvml.facts: the %s mock (-want +got):\n%s", nvmlfacts.MockDGXH100, diff)
			}
		}
	}
	if !found {
		t.Errorf("no nvml.facts check in %+v", doc.Hosts[0].Checks)
	}
}

// TestRunnerKnowsNoSimulation: the runner asks transports for what they
// offer; which transport simulates is connect's and sim's business.
func TestRunnerKnowsNoSimulation(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			if strings.HasSuffix(imp.Path.Value, `/provision/sim"`) || strings.HasSuffix(imp.Path.Value, `/provision/local"`) {
				t.Errorf("%s imports %s", f, imp.Path.Value)
			}
		}
	}
}

// countingSim counts the commands verify runs on a simulated host.
type countingSim struct {
	*sim.Transport
	runs *int
}

func (c countingSim) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	*c.runs++
	return c.Transport.Run(ctx, cmd)
}

// TestSpecChecksReuseProbe: the spec.* checks compare the spec's resources
// with the facts the probe already gathered; the probe tier runs the probe
// and the kernel log read (kernel.xid) on the host, and the spec checks add
// no round trip of their own.
func TestSpecChecksReuseProbe(t *testing.T) {
	cfg, diags := spec.LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(`
node "n" {
  hosts  = ["sim://hgx-h100-stale"]
  sysctl = { "vm.swappiness" = "1" }
}`)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	root, err := sim.MaterializeHost("sim://hgx-h100-stale", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	o := Options{KB: testKB, Tier: verify.TierProbe, Target: target.Options{Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		return countingSim{sim.New(h.Name, root), &runs}, nil
	}}}
	doc := Run(context.Background(), []target.Host{{Host: cfg.Nodes[0].Hosts[0], Node: cfg.Nodes[0]}}, o)
	var sysctl *verify.CheckResult
	for _, c := range doc.Hosts[0].Checks {
		if c.ID == "spec.sysctl" {
			sysctl = &c
		}
	}
	// The stale node has vm.swappiness 60 and no gpuform drop-in: the
	// drop-in apply writes changes a live value, so it reads as drift.
	if sysctl == nil || sysctl.Status != verify.StatusFail || sysctl.Observed != "vm.swappiness=60" || sysctl.Expected != "vm.swappiness=1" {
		t.Errorf("spec.sysctl: %+v", sysctl)
	}
	if runs != 2 {
		t.Errorf("verify ran %d commands on the host, want 2 (the probe, the kernel log)", runs)
	}
}
