package health

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/spec"
)

// Health mode judges rails as verify does: a compute rail whose port is
// DOWN drains the node with the check, the catalogue's action and the
// device, port and bus id in the reason; a storage port the spec does not
// name being DOWN drains nothing.
func TestDecideDownRail(t *testing.T) {
	cfg, diags := spec.LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(`
module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}
node "n" {
  hosts    = ["gpu1"]
  hardware = module.hgx.hardware
  affinity {
    gpu_nic = { 3 = "mlx5_5" }
  }
}`)}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	host := func(railState, railPhys string) *facts.Node {
		return &facts.Node{
			PCI: []facts.PCIDevice{{Address: "0000:5e:00.0", Kind: facts.KindInfiniBand, RDMADevs: []string{"mlx5_5"},
				CurrentLinkSpeed: "32.0 GT/s PCIe", MaxLinkSpeed: "32.0 GT/s PCIe", CurrentLinkWidth: 16, MaxLinkWidth: 16}},
			RDMA: []facts.RDMADevice{
				{Name: "mlx5_2", Address: "0000:29:00.1", Ports: []facts.RDMAPort{{Port: 1, LinkLayer: "Ethernet", Rate: "400 Gb/sec (4X NDR)", State: "1: DOWN", PhysState: "3: Disabled"}}},
				{Name: "mlx5_5", Address: "0000:5e:00.0", Ports: []facts.RDMAPort{{Port: 1, LinkLayer: "InfiniBand", Rate: "400 Gb/sec (4X NDR)", State: railState, PhysState: railPhys}}},
			},
		}
	}
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		f      *facts.Node
		drain  bool
		reason string
	}{
		{"rail down", host("1: DOWN", "2: Polling"), true, "nic.link[mlx5_5]: inspect: mlx5_5 port 1 (00000000:5E:00.0): port state DOWN, physical state Polling: no link partner"},
		{"rail up, storage port down", host("4: ACTIVE", "5: LinkUp"), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var checks []verify.CheckResult
			// The NIC checks of a full verify.Check (without NVML, whose
			// nvml.facts failure would drain on its own).
			for _, c := range verify.Check(verify.Expectation{KB: testKB, Spec: cfg.Nodes[0]}, nil, verify.HostFacts{Facts: tc.f}) {
				if strings.HasPrefix(c.ID, "nic.") {
					checks = append(checks, c)
				}
			}
			if len(checks) != 2 {
				t.Fatalf("NIC checks %+v, want nic.link and nic.pcie_link of mlx5_5", checks)
			}
			d := Decide(docWith(checks, nil, "", t0), &State{}, t0, policy)
			if d.Drain != tc.drain || !strings.HasPrefix(d.Reason, tc.reason) {
				t.Errorf("drain %v reason %q, want %v %q", d.Drain, d.Reason, tc.drain, tc.reason)
			}
		})
	}
}
