package plan_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/plan/plantest"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/spec"
)

// trays are the hosts of two simulated GB200 NVL72 racks, 18 trays each.
func trays(rack int) []string {
	var out []string
	for i := 1; i <= 18; i++ {
		out = append(out, fmt.Sprintf("sim://gb200-nvl72-tray/r%d-t%02d", rack, i))
	}
	return out
}

// trayFacts probes one simulated GB200 tray once for every domain test:
// the trays of a fresh rack are identical, and plan's domain logic (not
// the probe, which provision/facts tests on every profile) is judged
// here, so each tray of a rack gets a copy under its own name.
var trayFacts = sync.OnceValues(func() (*facts.Node, error) {
	dir, err := os.MkdirTemp("", "gpuform-tray-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	root, err := sim.Materialize("gb200-nvl72-tray", dir)
	if err != nil {
		return nil, err
	}
	return facts.Probe(context.Background(), sim.New("sim://gb200-nvl72-tray", root), facts.Options{Reads: resource.Reads()})
})

// rackSpec is two racks of trays as one node (or the canary tray of rack
// 1 as a node of its own with another driver), each rack one NVLink
// domain, rolled out in domains.
func rackSpec(t *testing.T, canaryDriver string) *spec.Config {
	r1, r2 := trays(1), trays(2)
	quote := func(hs []string) string { return `["` + strings.Join(hs, `", "`) + `"]` }
	main := r1
	canary := ""
	if canaryDriver != "" {
		main = r1[:17]
		canary = fmt.Sprintf(`
node "canary" {
  hosts  = %s
  sysctl = { "vm.swappiness" = "1" }
  driver {
    version       = %q
    kernel_module = "open"
  }
  nvlink_domain "rack1" {}
  rollout { unit = "nvlink_domain" }
}
`, quote(r1[17:]), canaryDriver)
	}
	src := fmt.Sprintf(`
node "racks" {
  hosts  = %s
  sysctl = { "vm.swappiness" = "1" }
  driver {
    version       = "580.159.03"
    kernel_module = "open"
  }
  nvlink_domain "rack1" { hosts = %s }
  nvlink_domain "rack2" { hosts = %s }
  rollout {
    unit         = "nvlink_domain"
    batch        = 1
    max_failures = 0
  }
}
%s`, quote(append(append([]string{}, main...), r2...)), quote(main), quote(r2), canary)
	return plantest.LoadSpec(t, map[string]string{"racks.gpuform.hcl": src})
}

func planRacks(t *testing.T, cfg *spec.Config, only []string) *plan.Plan {
	t.Helper()
	hosts, diags := target.Select(cfg, only)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	f, err := trayFacts()
	if err != nil {
		t.Fatal(err)
	}
	probed := make([]target.Probed, len(hosts))
	for i, h := range hosts {
		c := *f
		c.Host = h.Host.Name
		probed[i] = target.Probed{Host: h, Facts: &c}
	}
	return plan.Make(testKB, probed)
}

// TestPlanRolloutInDomains plans two racks of 18 trays: the rollout
// carries each rack as one unit, in the plan and in the plan file.
func TestPlanRolloutInDomains(t *testing.T) {
	t.Parallel()
	p := planRacks(t, rackSpec(t, ""), nil)
	if p.Errored {
		for _, h := range p.Hosts {
			if h.Error != "" {
				t.Fatalf("%s: %s", h.Host, h.Error)
			}
		}
	}
	if !p.Applyable {
		t.Fatal("plan of two racks with a sysctl to set is not applyable")
	}
	want := []plan.RolloutDomain{{Name: "rack1", Hosts: trays(1)}, {Name: "rack2", Hosts: trays(2)}}
	if d := cmp.Diff(want, p.Nodes[0].Domains); d != "" {
		t.Errorf("domains (-want +got):\n%s", d)
	}
	if p.Nodes[0].Unit != spec.RolloutUnitNVLinkDomain {
		t.Errorf("unit %q", p.Nodes[0].Unit)
	}
	f, err := plan.NewFile(p, t.TempDir(), nil, nil, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	back, err := plan.ParseFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(p.Nodes[0].Domains, back.Plan.Nodes[0].Domains); d != "" {
		t.Errorf("domains after the plan file (-want +got):\n%s", d)
	}
}

// TestPlanRefusesPartOfADomain: a -target that leaves trays of a rack out,
// and a tray whose node block pins another driver, are refused before
// anything runs, naming the domain; the other rack is planned.
func TestPlanRefusesPartOfADomain(t *testing.T) {
	t.Parallel()
	t.Run("target leaves trays out", func(t *testing.T) {
		t.Parallel()
		r1 := trays(1)
		p := planRacks(t, rackSpec(t, ""), append(r1[:5:5], trays(2)...))
		if p.Applyable {
			t.Fatal("a plan of 5 of rack1's 18 trays is applyable")
		}
		for _, h := range p.Hosts {
			inRack1 := strings.Contains(h.Host, "/r1-")
			if inRack1 != (h.Error != "") {
				t.Errorf("%s: error %q", h.Host, h.Error)
			}
			if inRack1 && !strings.Contains(h.Error, `leaves out 13 of the 18 hosts of NVLink domain "rack1"`) {
				t.Errorf("%s: error %q does not name the domain and its left-out trays", h.Host, h.Error)
			}
		}
	})
	t.Run("tray with another driver", func(t *testing.T) {
		t.Parallel()
		p := planRacks(t, rackSpec(t, "580.95.05"), nil)
		if p.Applyable {
			t.Fatal("a rack with one tray on another driver is applyable")
		}
		for _, h := range p.Hosts {
			inRack1 := strings.Contains(h.Host, "/r1-")
			if inRack1 != (h.Error != "") {
				t.Errorf("%s: error %q", h.Host, h.Error)
			}
			if inRack1 && !strings.Contains(h.Error, `NVLink domain "rack1" would run driver 580.95.05 on node "canary" and 580.159.03 on node "racks"`) {
				t.Errorf("%s: error %q", h.Host, h.Error)
			}
			if inRack1 && len(h.ResourceChanges) != 0 {
				t.Errorf("%s: a refused host still has %d changes", h.Host, len(h.ResourceChanges))
			}
		}
	})
}
