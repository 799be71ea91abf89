package target_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/fleet"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

func load(t *testing.T, src string) *spec.Config {
	t.Helper()
	cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(src)}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatalf("spec: %v", diags)
	}
	return cfg
}

func names(hosts []target.Host) []string {
	var out []string
	for _, h := range hosts {
		out = append(out, h.Node.Name+"/"+h.Host.Name)
	}
	return out
}

func TestSelect(t *testing.T) {
	cfg := load(t, `
node "a" {
  hosts = ["gpu[01-03]"]
}
node "b" {
  hosts = ["cpu1"]
}
`)
	tests := map[string]struct {
		only    []string
		want    []string
		wantErr string
	}{
		"all, in spec order": {want: []string{"a/gpu01", "a/gpu02", "a/gpu03", "b/cpu1"}},
		// Spec order, not the order of -target.
		"ranges and commas": {only: []string{"cpu1,gpu[02-03]"}, want: []string{"a/gpu02", "a/gpu03", "b/cpu1"}},
		"repeated flag":     {only: []string{"gpu01", "gpu01"}, want: []string{"a/gpu01"}},
		"typo":              {only: []string{"gpu04"}, wantErr: `-target gpu04: no node in the spec has host "gpu04" (hosts: cpu1, gpu01, gpu02, gpu03)`},
		"bad range":         {only: []string{"gpu[3-1]"}, wantErr: "-target gpu[3-1]: "},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, diags := target.Select(cfg, tc.only)
			if tc.wantErr != "" {
				if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.wantErr) {
					t.Fatalf("diags = %v, want %q", diags, tc.wantErr)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if diff := cmp.Diff(tc.want, names(got)); diff != "" {
				t.Errorf("hosts (-want +got):\n%s", diff)
			}
		})
	}
}

// recorder is a transport that records whether each command asked for
// the host's privilege escalation, and answers nothing.
type recorder struct {
	host    string
	mu      *sync.Mutex
	become  map[string]bool
	scripts *[]string // each command's script, when not nil
}

func (r recorder) Host() string { return r.host }
func (r recorder) Close() error { return nil }
func (r recorder) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	r.mu.Lock()
	r.become[r.host] = cmd.Become
	if r.scripts != nil {
		*r.scripts = append(*r.scripts, cmd.Script)
	}
	r.mu.Unlock()
	return transport.Result{}, fmt.Errorf("recorded")
}

// TestProbeUsesBecome: the probe of every command runs with the host's
// become; before the target path, facts, verify and lock probed without.
func TestProbeUsesBecome(t *testing.T) {
	hosts := []target.Host{
		{Host: spec.Host{Name: "hardened", Become: "sudo"}},
		{Host: spec.Host{Name: "plain"}},
	}
	var mu sync.Mutex
	become := map[string]bool{}
	o := target.Options{Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		return recorder{host: h.Name, mu: &mu, become: become}, nil
	}}
	probed, err := target.Probe(context.Background(), hosts, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(probed) != 2 || probed[0].Err == nil || probed[0].Host.Host.Name != "hardened" {
		t.Fatalf("probed = %+v", probed)
	}
	if diff := cmp.Diff(map[string]bool{"hardened": true, "plain": false}, become); diff != "" {
		t.Errorf("become per host (-want +got):\n%s", diff)
	}
}

// TestProbeSharesTheScript: every host of one Probe is sent the same
// probe script text, built once (about 33 kB), not a copy built for each
// host, and it is the probe for resource.Reads().
func TestProbeSharesTheScript(t *testing.T) {
	var hosts []target.Host
	for i := range 5 {
		hosts = append(hosts, target.Host{Host: spec.Host{Name: fmt.Sprintf("n%d", i)}})
	}
	var mu sync.Mutex
	var scripts []string
	o := target.Options{Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		return recorder{host: h.Name, mu: &mu, become: map[string]bool{}, scripts: &scripts}, nil
	}}
	if _, err := target.Probe(context.Background(), hosts, o); err != nil {
		t.Fatal(err)
	}
	if len(scripts) != len(hosts) {
		t.Fatalf("%d probes ran, want %d", len(scripts), len(hosts))
	}
	if want := facts.Script(resource.Reads()); scripts[0] != want {
		t.Fatalf("the probe sent is not facts.Script(resource.Reads()) (%d bytes, want %d)", len(scripts[0]), len(want))
	}
	for i, s := range scripts[1:] {
		if unsafe.StringData(s) != unsafe.StringData(scripts[0]) || len(s) != len(scripts[0]) {
			t.Errorf("probe %d: its own copy of the script, not the one shared", i+1)
		}
	}
}

// TestEachDefaultParallelism: the zero Options run fleet's default number
// of hosts at once (plan.Probe and apply used to default to 10).
func TestEachDefaultParallelism(t *testing.T) {
	var hosts []target.Host
	for i := range fleet.DefaultParallelism + 8 {
		hosts = append(hosts, target.Host{Host: spec.Host{Name: fmt.Sprintf("h%02d", i)}})
	}
	var active, peak atomic.Int32
	target.Each(context.Background(), hosts, target.Options{}, func(ctx context.Context, h target.Host) error {
		n := active.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
		active.Add(-1)
		return nil
	})
	if got := peak.Load(); got != fleet.DefaultParallelism {
		t.Errorf("peak parallelism %d, want fleet.DefaultParallelism = %d", got, fleet.DefaultParallelism)
	}
}

func TestProbeLimit(t *testing.T) {
	tests := map[string]struct {
		flag, inventory, want time.Duration
	}{
		"default":       {want: target.DefaultProbeTimeout},
		"inventory":     {inventory: time.Minute, want: time.Minute},
		"flag wins":     {flag: 5 * time.Second, inventory: time.Minute, want: 5 * time.Second},
		"flag, no spec": {flag: 5 * time.Second, want: 5 * time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := target.Options{ProbeTimeout: tc.flag}
			if got := o.ProbeLimit(spec.Host{ProbeTimeout: tc.inventory}); got != tc.want {
				t.Errorf("ProbeLimit = %s, want %s", got, tc.want)
			}
		})
	}
}

// together holds each probe's output until every host's probe is done, so
// that all the outputs are in at once, as a fleet's tend to be; it
// records when its connection is closed.
type together struct {
	transport.Transport
	all    *sync.WaitGroup
	closed atomic.Bool
}

func (t *together) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	res, err := t.Transport.Run(ctx, cmd)
	t.all.Done()
	t.all.Wait()
	return res, err
}

func (t *together) Close() error {
	t.closed.Store(true)
	return t.Transport.Close()
}

// TestProbeParsesAFewAtOnce: every host is probed at once (parallelism
// 8), but when all the outputs are in together only GOMAXPROCS hosts are
// parsed and handed over at once, each with its connection already
// closed: the rest wait holding their output alone.
func TestProbeParsesAFewAtOnce(t *testing.T) {
	const procs, n = 2, 8
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	root, err := sim.Materialize("hgx-h100-stale", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var hosts []target.Host
	for i := range n {
		hosts = append(hosts, target.Host{Host: spec.Host{Name: fmt.Sprintf("n%d", i)}})
	}
	var all sync.WaitGroup
	all.Add(n)
	var mu sync.Mutex
	conns := map[string]*together{}
	o := target.Options{Parallelism: n, Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		c := &together{Transport: sim.New(h.Name, root), all: &all}
		mu.Lock()
		conns[h.Name] = c
		mu.Unlock()
		return c, nil
	}}
	var active, peak atomic.Int32
	var handed atomic.Int32
	err = target.ProbeEach(context.Background(), hosts, o, func(int) {}, func(i int, p target.Probed) {
		if p.Err != nil {
			t.Errorf("%s: %v", p.Host.Host.Name, p.Err)
			return
		}
		handed.Add(1)
		mu.Lock()
		c := conns[p.Host.Host.Name]
		mu.Unlock()
		if !c.closed.Load() {
			t.Errorf("%s handed over with its connection open", p.Host.Host.Name)
		}
		a := active.Add(1)
		for {
			p := peak.Load()
			if a <= p || peak.CompareAndSwap(p, a) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		active.Add(-1)
	})
	if err != nil {
		t.Fatal(err)
	}
	if handed.Load() != n {
		t.Fatalf("%d hosts handed over, want %d", handed.Load(), n)
	}
	if got := peak.Load(); got > procs {
		t.Errorf("%d hosts handed over at once, want at most GOMAXPROCS = %d", got, procs)
	}
}
