package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/burnin"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/spec"
)

// TestRequireBurnin: with -require-burnin a simulated node without a
// burn-in record fails burnin.record; with a passed record of its GPUs
// and driver (written through the node-side script into the simulated
// root) it passes; on a simulated clock past the spec's max_age it fails
// as expired. Without -require-burnin no burnin.record check is made.
func TestRequireBurnin(t *testing.T) {
	t.Parallel()
	cfg, diags := spec.LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(`
node "n" {
  hosts  = ["sim://hgx-h100-converged"]
  verify {
    burnin {
      max_age = "48h"
    }
  }
}`)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	root, err := sim.MaterializeHost("sim://hgx-h100-converged", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	connect := func(ctx context.Context, h spec.Host) (transport.Transport, error) { return sim.New(h.Name, root), nil }
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clock := now
	o := Options{KB: testKB, Tier: verify.TierProbe, RequireBurnin: true, XIDWindow: 10 * time.Millisecond, Now: func() time.Time { return clock }, Target: target.Options{Connect: connect}}
	hosts := []target.Host{{Host: cfg.Nodes[0].Hosts[0], Node: cfg.Nodes[0]}}
	record := func() *verify.CheckResult {
		t.Helper()
		doc := Run(context.Background(), hosts, o)
		for _, c := range doc.Hosts[0].Checks {
			if c.ID == "burnin.record" {
				return &c
			}
		}
		return nil
	}
	if c := record(); c == nil || c.Status != verify.StatusFail || c.Observed != "missing" {
		t.Fatalf("no record: %+v", c)
	}
	doc := Run(context.Background(), hosts, o)
	rep := doc.Hosts[0].NVML
	tr, _ := connect(context.Background(), hosts[0].Host)
	rec := burnin.NewRecord(burnin.IdentityOf(rep), now.Add(-5*time.Hour), now.Add(-time.Hour), 4*time.Hour,
		[]burnin.Finding{{Check: "burnin.thermal", Status: burnin.StatusPass, Message: "modelled"}})
	rec.Modelled = true
	if err := burnin.WriteRecord(context.Background(), tr, rec, false); err != nil {
		t.Fatal(err)
	}
	if c := record(); c == nil || c.Status != verify.StatusPass || c.Observed != "valid" {
		t.Fatalf("passed record: %+v", c)
	}
	clock = now.Add(48 * time.Hour)
	if c := record(); c == nil || c.Status != verify.StatusFail || c.Observed != "expired" {
		t.Fatalf("after max_age: %+v", c)
	}
	o.RequireBurnin = false
	if c := record(); c != nil {
		t.Errorf("without -require-burnin: %+v", c)
	}
}

// TestBurninTier: -tier burnin on a simulated node that has no load
// generator (a simulated node replays no load: the replays are
// burnin's TestRunNodeReplay) does not pass: burnin.load fails, the
// parts that had nothing to judge are not run, the failed record is
// written, and -require-burnin then refuses the node as failed.
func TestBurninTier(t *testing.T) {
	t.Parallel()
	cfg, diags := spec.LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(`
node "n" {
  hosts  = ["sim://hgx-h100-converged"]
  verify {
    burnin {
      duration = "1m"
    }
  }
}`)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	root, err := sim.MaterializeHost("sim://hgx-h100-converged", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := Options{KB: testKB, Tier: verify.TierBurnin, XIDWindow: 10 * time.Millisecond, Target: target.Options{Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) { return sim.New(h.Name, root), nil }}}
	hosts := []target.Host{{Host: cfg.Nodes[0].Hosts[0], Node: cfg.Nodes[0]}}
	doc := Run(context.Background(), hosts, o)
	if doc.OK() {
		t.Fatal("a burn-in that ran no load passed")
	}
	got := map[string]verify.Status{}
	for _, c := range doc.Hosts[0].Checks {
		got[c.ID] = c.Status
	}
	if got["burnin.load"] != verify.StatusFail || got["burnin.thermal"] != verify.StatusNotRun || got["burnin.write"] != verify.StatusPass {
		t.Errorf("burn-in checks: %v", got)
	}
	o.Tier, o.RequireBurnin = verify.TierProbe, true
	doc = Run(context.Background(), hosts, o)
	var rec *verify.CheckResult
	for _, c := range doc.Hosts[0].Checks {
		if c.ID == "burnin.record" {
			rec = &c
		}
	}
	if rec == nil || rec.Status != verify.StatusFail || rec.Observed != "failed" || !strings.Contains(rec.Message, "burnin.load") {
		t.Errorf("burnin.record after a failed burn-in: %+v", rec)
	}
}

// replaysDuringLoad is a simulated node whose NVML reads NVLink link 0 of
// GPU 4 with 120 replayed flits from its second read on: flits replayed
// while the burn-in loaded the node (the first read is verify's, before
// the burn-in).
type replaysDuringLoad struct {
	*sim.Transport
	mu    sync.Mutex
	reads int
}

func (r *replaysDuringLoad) NVMLMock() (transport.NVMLMock, error) {
	m, err := r.Transport.NVMLMock()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	if r.reads > 1 {
		m.Faults = append(m.Faults, "nvlink_errors:4:120")
	}
	return m, err
}

// TestBurninNVLinkCounters: the burn-in reads NVML again after its load
// and NCCL runs and compares each active NVLink link's error counters:
// unchanged on the simulated node, they pass burnin.counters; a replay
// counter that grew fails it, naming the GPU's link and how much.
func TestBurninNVLinkCounters(t *testing.T) {
	t.Parallel()
	cfg, diags := spec.LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(`
node "n" {
  hosts  = ["sim://hgx-h100-converged"]
  verify {
    burnin {
      duration = "1m"
    }
  }
}`)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for _, tc := range []struct {
		name   string
		grows  bool
		status verify.Status
		want   string
	}{
		// 8 GPUs' ECC counts and 18 links × 4 counters each; the
		// simulated node has no AER files.
		{"still", false, verify.StatusPass, "584 PCIe AER, ECC and NVLink error counters unchanged"},
		{"grows", true, verify.StatusFail, "error counters rose during the load: 00000000:9D:00.0/nvlink0_replay +120"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root, err := sim.MaterializeHost("sim://hgx-h100-converged", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			connect := func(ctx context.Context, h spec.Host) (transport.Transport, error) {
				if tc.grows {
					return &replaysDuringLoad{Transport: sim.New(h.Name, root)}, nil
				}
				return sim.New(h.Name, root), nil
			}
			o := Options{KB: testKB, Tier: verify.TierBurnin, XIDWindow: 10 * time.Millisecond, Target: target.Options{Connect: connect}}
			doc := Run(context.Background(), []target.Host{{Host: cfg.Nodes[0].Hosts[0], Node: cfg.Nodes[0]}}, o)
			var got *verify.CheckResult
			for _, c := range doc.Hosts[0].Checks {
				if c.ID == "burnin.counters" {
					got = &c
				}
			}
			if got == nil || got.Status != tc.status || got.Observed != tc.want {
				t.Errorf("burnin.counters: %+v; want %s with %q", got, tc.status, tc.want)
			}
		})
	}
}

// TestBurninNCCLWithPeers: at the burn-in tier a node group's multi-node
// nccl_test runs burnin.NCCLIterations times from the group's first host
// (the fleet tier's run is the first), and each host's burn-in judges
// those iterations as burnin.nccl[NAME], the long run with a peer. A
// group of two simulated nodes replays the published 2-node capture every
// time, and that capture ran with validation off (-c 0): no #wrong to
// count, so every iteration fails the burn-in (fail closed), each host
// judging all five.
func TestBurninNCCLWithPeers(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	cfg, diags := spec.LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(`
node "train" {
  hosts  = ["sim://hgx-h100-converged/p1", "sim://hgx-h100-converged/p2"]
  verify {
    optional = ["dcgm"]
    burnin {
      duration = "1m"
    }
    nccl_test "pair" {
      command        = "mpirun -np 16 all_reduce_perf -b 8M -e 8G -f 2 -g 1"
      min_busbw_gbps = 100
    }
  }
}`)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var targets []target.Host
	var roots []string
	for _, h := range cfg.Nodes[0].Hosts {
		root, err := sim.MaterializeHost(h.Name, state)
		if err != nil {
			t.Fatal(err)
		}
		roots = append(roots, root)
		targets = append(targets, target.Host{Host: h, Node: cfg.Nodes[0]})
	}
	o := Options{KB: testKB, Tier: verify.TierBurnin, AllowLocal: true, XIDWindow: 10 * time.Millisecond, Target: target.Options{Parallelism: 2, Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		return connect.Open(ctx, h, connect.Options{SimStateDir: state, AllowLocal: true})
	}}}
	doc := Run(context.Background(), targets, o)
	for _, h := range doc.Hosts {
		var got *verify.CheckResult
		for _, c := range h.Checks {
			if c.ID == "burnin.nccl[pair]" {
				got = &c
			}
		}
		if got == nil || got.Status != verify.StatusFail || got.Observed != "5 of 5 iterations failed: iteration 1: ran with -c 0, no #wrong counted" {
			t.Errorf("%s: burnin.nccl[pair] %+v; want 5 iterations judged, failed for want of #wrong", h.Host, got)
		}
	}
	calls, err := os.ReadFile(filepath.Join(roots[0], "var", "log", "gpuform-sim", "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(calls), "\nmpirun ") + map[bool]int{true: 1}[strings.HasPrefix(string(calls), "mpirun ")]; n != burnin.NCCLIterations {
		t.Errorf("the group's first host ran mpirun %d times, want %d:\n%s", n, burnin.NCCLIterations, calls)
	}
}

// TestFinishBurninFleetClocks: the records of hosts burnt in together
// are written after their clocks under load are compared across the
// hosts: the host whose GPUs all run 20 % slow gets burnin.fleet_clocks
// failures and a failed record on its node, though its own burn-in
// passed; the others' records pass with the comparison in them.
func TestFinishBurninFleetClocks(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	var hosts []report.Host
	pending := map[string]*burninPending{}
	roots := map[string]string{}
	for i, mhz := range []int{1980, 1980, 1584} {
		name := fmt.Sprintf("sim://hgx-h100-converged/f%d", i+1)
		root, err := sim.MaterializeHost(name, state)
		if err != nil {
			t.Fatal(err)
		}
		roots[name] = root
		var samples []burnin.Sample
		for g := range 4 {
			samples = append(samples, burnin.Sample{Seconds: 5, BusID: fmt.Sprintf("0000:%02x:00.0", 0x18+g), Model: "NVIDIA H100 80GB HBM3", SMClockMHz: mhz})
		}
		passed := []burnin.Finding{{Check: "burnin.clocks", Status: burnin.StatusPass, Message: "own peers"}}
		rec := burnin.NewRecord(burnin.Identity{Driver: "550.127.08"}, time.Unix(0, 0), time.Unix(60, 0), time.Minute, passed)
		pending[name] = &burninPending{tg: target.Host{Host: spec.Host{Name: name}}, rec: &rec, clocks: burnin.ClockValues(name, samples)}
		hosts = append(hosts, report.Host{Host: name})
	}
	o := Options{Target: target.Options{Parallelism: 3, Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		return sim.New(h.Name, roots[h.Name]), nil
	}}}
	finishBurnin(context.Background(), hosts, pending, o)
	for i, h := range hosts {
		slow := i == 2
		ids := map[string]verify.Status{}
		for _, c := range h.Checks {
			ids[c.ID] = c.Status
		}
		if ids["burnin.write"] != verify.StatusPass {
			t.Errorf("%s: checks %v, want burnin.write passed", h.Host, ids)
		}
		if slow && (ids["burnin.fleet_clocks[0000:18:00.0]"] != verify.StatusFail || len(ids) != 5) {
			t.Errorf("%s: checks %v, want its 4 GPUs failing burnin.fleet_clocks", h.Host, ids)
		}
		if !slow && (ids["burnin.fleet_clocks"] != verify.StatusPass || len(ids) != 2) {
			t.Errorf("%s: checks %v, want burnin.fleet_clocks passed", h.Host, ids)
		}
		data, found, err := burnin.ReadRecord(context.Background(), sim.New(h.Host, roots[h.Host]))
		if err != nil || !found {
			t.Fatalf("%s: record found %v, %v", h.Host, found, err)
		}
		rec, err := burnin.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Passed == slow || len(rec.Findings) < 2 || rec.Findings[1].Check != "burnin.fleet_clocks" {
			t.Errorf("%s: record passed %v with %+v; want passed %v with the comparison", h.Host, rec.Passed, rec.Findings, !slow)
		}
	}
}
