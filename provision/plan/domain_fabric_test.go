package plan_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/plan/plantest"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/spec"
)

// fabricTrayFacts probes simulated GB200 trays with the fabric read
// (facts.Options.Fabric), through the simulated nvidia-smi -q: a healthy
// tray, one whose GPU 0 has the fault fabric_not_started planted (every
// layer derived from it: NVML, nvidia-smi), and one whose nvidia-smi
// fails.
var fabricTrayFacts = sync.OnceValues(func() (map[string]*facts.Node, error) {
	out := map[string]*facts.Node{}
	for _, kind := range []string{"healthy", "not_started", "unreadable"} {
		dir, err := os.MkdirTemp("", "gpuform-tray-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		root, err := sim.Materialize("gb200-nvl72-tray", dir)
		if err != nil {
			return nil, err
		}
		switch kind {
		case "not_started":
			err = sim.PlantFaults(root, []byte("gpu 0008:01:00.0 fabric_not_started\n"))
		case "unreadable":
			err = os.MkdirAll(filepath.Join(root, "var/lib/gpuform-sim/fail"), 0o755)
			if err == nil {
				err = os.WriteFile(filepath.Join(root, "var/lib/gpuform-sim/fail/nvidia-smi"), []byte("Unable to determine the device handle for GPU0008:01:00.0: Unknown Error"), 0o644)
			}
		}
		if err != nil {
			return nil, err
		}
		n, err := facts.Probe(context.Background(), sim.New("sim://gb200-nvl72-tray", root), facts.Options{Reads: resource.Reads(), Fabric: true})
		if err != nil {
			return nil, err
		}
		out[kind] = n
	}
	return out, nil
})

// TestFabricFactsOnTheSimulatedTray: the probe reads the four GPUs'
// registration from nvidia-smi -q; the planted fault shows Not Started
// there, and a failing nvidia-smi is an error, never a domain.
func TestFabricFactsOnTheSimulatedTray(t *testing.T) {
	t.Parallel()
	fs, err := fabricTrayFacts()
	if err != nil {
		t.Fatal(err)
	}
	got, err := fs["healthy"].Fabric.Domain()
	if want := "9c6f5af3-53bf-49b5-a436-b66766c413c3/4026"; err != nil || got != want {
		t.Errorf("healthy tray: domain %q, %v; want %q", got, err, want)
	}
	if n := len(fs["healthy"].Fabric.GPUs); n != 4 {
		t.Errorf("healthy tray: %d GPUs' fabric read, want 4", n)
	}
	if _, err := fs["not_started"].Fabric.Domain(); err == nil || !strings.Contains(err.Error(), "GPU 0's NVLink fabric registration is Not Started") {
		t.Errorf("tray with fabric_not_started: %v", err)
	}
	if _, err := fs["unreadable"].Fabric.Domain(); err == nil || !strings.Contains(err.Error(), "Unable to determine the device handle") {
		t.Errorf("tray whose nvidia-smi fails: %v", err)
	}
	n, err := trayFacts()
	if err != nil {
		t.Fatal(err)
	}
	if n.Fabric != nil {
		t.Errorf("a probe not asked for the fabric read it: %+v", n.Fabric)
	}
}

// fabricRackSpec is two racks of trays in one node block whose domains
// are read from the fabric, rolled out in domains.
func fabricRackSpec(t *testing.T) *spec.Config {
	hosts := append(trays(1), trays(2)...)
	src := fmt.Sprintf(`
node "racks" {
  hosts  = ["%s"]
  sysctl = { "vm.swappiness" = "1" }
  driver {
    version       = "580.159.03"
    kernel_module = "open"
  }
  nvlink_domain "nvl72" { from = "fabric" }
  rollout {
    unit  = "nvlink_domain"
    batch = 1
  }
}
`, strings.Join(hosts, `", "`))
	return plantest.LoadSpec(t, map[string]string{"racks.gpuform.hcl": src})
}

// planFabricRacks plans the two racks: rack 1's trays report the
// simulated tray's clique (4026), rack 2's the same facts with clique 4027
// (one simulated profile has one clique; a second rack is modelled by
// that edit); bad maps a tray to the facts it gets instead.
func planFabricRacks(t *testing.T, only []string, bad map[string]string) *plan.Plan {
	t.Helper()
	fs, err := fabricTrayFacts()
	if err != nil {
		t.Fatal(err)
	}
	hosts, diags := target.Select(fabricRackSpec(t), only)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	probed := make([]target.Probed, len(hosts))
	for i, h := range hosts {
		c := *fs["healthy"]
		if kind, ok := bad[h.Host.Name]; ok {
			c = *fs[kind]
		} else if strings.Contains(h.Host.Name, "/r2-") {
			fab := *c.Fabric
			fab.GPUs = append([]facts.GPUFabric{}, fab.GPUs...)
			for j := range fab.GPUs {
				fab.GPUs[j].CliqueID = 4027
			}
			c.Fabric = &fab
		}
		c.Host = h.Host.Name
		probed[i] = target.Probed{Host: h, Facts: &c}
	}
	return plan.Make(testKB, probed)
}

// TestPlanDomainsFromFabric: a block read from the fabric becomes one
// domain per clique, each rack whole; a tray whose fabric is not up, or
// cannot be read, or is left out by -target, refuses the block's changes
// (which rack it is in is not guessed), naming the tray and why.
func TestPlanDomainsFromFabric(t *testing.T) {
	t.Parallel()
	t.Run("two cliques", func(t *testing.T) {
		t.Parallel()
		p := planFabricRacks(t, nil, nil)
		for _, h := range p.Hosts {
			if h.Error != "" {
				t.Fatalf("%s: %s", h.Host, h.Error)
			}
		}
		want := []plan.RolloutDomain{{Name: "nvl72/9c6f5af3.4026", Hosts: trays(1)}, {Name: "nvl72/9c6f5af3.4027", Hosts: trays(2)}}
		if d := cmp.Diff(want, p.Nodes[0].Domains); d != "" {
			t.Errorf("domains (-want +got):\n%s", d)
		}
		if !p.Applyable {
			t.Error("plan of two racks read from the fabric is not applyable")
		}
	})
	for _, tc := range []struct {
		name, kind, want string
		only             []string
	}{
		{name: "fabric not started", kind: "not_started", want: "sim://gb200-nvl72-tray/r1-t07: GPU 0's NVLink fabric registration is Not Started"},
		{name: "nvidia-smi fails", kind: "unreadable", want: "r1-t07: the NVLink fabric could not be read: nvidia-smi -q exited 15: Unable to determine"},
		{name: "target leaves a tray out", only: append(trays(1)[:6:6], trays(2)...), want: "the plan leaves out sim://gb200-nvl72-tray/r1-t07"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bad := map[string]string{}
			only := tc.only
			if tc.kind != "" {
				bad["sim://gb200-nvl72-tray/r1-t07"] = tc.kind
			}
			p := planFabricRacks(t, only, bad)
			if p.Applyable {
				t.Fatal("applyable with a tray whose domain is not known")
			}
			for _, h := range p.Hosts {
				if !strings.Contains(h.Error, tc.want) || !strings.Contains(h.Error, `nvlink_domain "nvl72" is read from the NVLink fabric`) {
					t.Errorf("%s: error %q, want it to say %q", h.Host, h.Error, tc.want)
				}
				if len(h.ResourceChanges) != 0 {
					t.Errorf("%s: a refused host still has %d changes", h.Host, len(h.ResourceChanges))
				}
			}
		})
	}
}
