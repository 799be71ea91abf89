package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/burnin"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/spec"
)

// loadDrops is a simulated node whose connection drops while the
// burn-in's sustained load runs (a GPU that wedges the node mid-load).
type loadDrops struct{ *sim.Transport }

func (l loadDrops) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	if strings.Contains(cmd.Script, "dcgmproftester") {
		return transport.Result{}, errors.New("connection lost while the command was running (no exit status)")
	}
	return l.Transport.Run(ctx, cmd)
}

// TestBurninUnfinishedVoidsOldRecord: a node with a valid passed burn-in
// record whose new burn-in does not finish (the connection drops during
// the load) must not keep qualifying under the old record: a burn-in
// started after a repair is what the node's qualification now hangs on.
// Before the fix the old record stayed and -require-burnin passed it.
func TestBurninUnfinishedVoidsOldRecord(t *testing.T) {
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
	plain := func(ctx context.Context, h spec.Host) (transport.Transport, error) { return sim.New(h.Name, root), nil }
	hosts := []target.Host{{Host: cfg.Nodes[0].Hosts[0], Node: cfg.Nodes[0]}}
	now := time.Now()
	o := Options{KB: testKB, Tier: verify.TierProbe, XIDWindow: 10 * time.Millisecond, Target: target.Options{Connect: plain}}
	doc := Run(context.Background(), hosts, o)
	rec := burnin.NewRecord(burnin.IdentityOf(doc.Hosts[0].NVML), now.Add(-2*time.Hour), now.Add(-time.Hour), time.Minute,
		[]burnin.Finding{{Check: "burnin.thermal", Status: burnin.StatusPass, Message: "modelled"}})
	if err := burnin.WriteRecord(context.Background(), sim.New(hosts[0].Host.Name, root), rec, false); err != nil {
		t.Fatal(err)
	}
	recordCheck := func() verify.CheckResult {
		t.Helper()
		o := o
		o.RequireBurnin = true
		for _, c := range Run(context.Background(), hosts, o).Hosts[0].Checks {
			if c.ID == "burnin.record" {
				return c
			}
		}
		t.Fatal("no burnin.record check")
		return verify.CheckResult{}
	}
	if c := recordCheck(); c.Status != verify.StatusPass {
		t.Fatalf("the old record before the new burn-in: %+v", c)
	}

	o.Tier = verify.TierBurnin
	o.Target.Connect = func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		return loadDrops{sim.New(h.Name, root)}, nil
	}
	doc = Run(context.Background(), hosts, o)
	if doc.OK() {
		t.Fatal("a burn-in whose load lost the node passed")
	}
	o.Tier, o.Target.Connect = verify.TierProbe, plain
	if c := recordCheck(); c.Status == verify.StatusPass {
		t.Errorf("after a burn-in that did not finish, the old record still qualifies the node: %+v", c)
	}
}

// TestFinishBurninOtherChecksFail: -tier burnin is everything -tier
// fleet runs, then the burn-in; a host whose burn-in parts all passed
// but whose other checks of the run failed (a PCIe link trained low, its
// group's NCCL run) is not burnt in, and its record must not say passed:
// -require-burnin would qualify it for a month on that record. The
// healthy host beside it keeps its passed record.
func TestFinishBurninOtherChecksFail(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	var hosts []report.Host
	pending := map[string]*burninPending{}
	roots := map[string]string{}
	for i, failing := range []bool{false, true} {
		name := fmt.Sprintf("sim://hgx-h100-converged/o%d", i+1)
		root, err := sim.MaterializeHost(name, state)
		if err != nil {
			t.Fatal(err)
		}
		roots[name] = root
		passed := []burnin.Finding{{Check: "burnin.thermal", Status: burnin.StatusPass, Message: "ok"}}
		rec := burnin.NewRecord(burnin.Identity{Driver: "550.127.08"}, time.Unix(0, 0), time.Unix(60, 0), time.Minute, passed)
		pending[name] = &burninPending{tg: target.Host{Host: spec.Host{Name: name}}, rec: &rec}
		checks := []verify.CheckResult{
			{ID: "nvml.gpus", Status: verify.StatusPass},
			{ID: "burnin.thermal", Status: verify.StatusPass},
		}
		if failing {
			checks = append(checks, verify.CheckResult{ID: "nvml.pcie_link[gpu5]", Status: verify.StatusFail})
		}
		hosts = append(hosts, report.Host{Host: name, Checks: checks})
	}
	o := Options{Target: target.Options{Parallelism: 2, Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		return sim.New(h.Name, roots[h.Name]), nil
	}}}
	finishBurnin(context.Background(), hosts, pending, o)
	for i, h := range hosts {
		failing := i == 1
		data, found, err := burnin.ReadRecord(context.Background(), sim.New(h.Host, roots[h.Host]))
		if err != nil || !found {
			t.Fatalf("%s: record found %v, %v", h.Host, found, err)
		}
		rec, err := burnin.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Passed == failing {
			t.Errorf("%s: record passed %v with %+v; want passed %v", h.Host, rec.Passed, rec.Findings, !failing)
		}
		if failing {
			v := burnin.Judge(data, true, time.Unix(120, 0), 0, burnin.Identity{Driver: "550.127.08"})
			if v.OK || !strings.Contains(v.Message, "nvml.pcie_link[gpu5]") {
				t.Errorf("%s: -require-burnin's verdict %v %q; want failed, naming nvml.pcie_link[gpu5]", h.Host, v.OK, v.Message)
			}
		}
	}
}
