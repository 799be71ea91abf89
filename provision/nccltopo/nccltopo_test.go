package nccltopo

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

var update = flag.Bool("update", false, "rewrite the golden topology files")

// vm is an 8-GPU H100 VM the way Azure's ND H100 v5 presents it: every
// GPU (domains 0001-0008) and every InfiniBand NIC (0101-0108) on its own
// virtual root port, no bridge in common. The description pairs GPU i
// with NIC i under switch sw<i>, GPUs 0-3 on NUMA node 0.
func vm() (*spec.Hardware, *facts.Node) {
	hw := &spec.Hardware{GPUCount: 8}
	f := &facts.Node{Arch: "x86_64", Hypervisor: "microsoft",
		CPU:  facts.CPU{Vendor: "GenuineIntel", Family: 6, ModelID: 143},
		NUMA: []facts.NUMANode{{ID: 0, CPUs: "0-47"}, {ID: 1, CPUs: "48-95"}}}
	for i := range 8 {
		gpu, nic := fmt.Sprintf("000%d:00:00.0", i+1), fmt.Sprintf("010%d:00:00.0", i+1)
		sw := fmt.Sprintf("sw%d", i)
		hw.GPUs = append(hw.GPUs, spec.HardwareGPU{Index: i, PCI: strings.ToUpper(gpu), NUMA: i / 4, Switch: sw})
		hw.NICs = append(hw.NICs, spec.HardwareNIC{Name: fmt.Sprintf("mlx5_ib%d", i), PCI: nic, NUMA: i / 4, Switch: sw, Link: "infiniband", RDMA: true})
		f.PCI = append(f.PCI,
			facts.PCIDevice{Address: gpu, Kind: facts.KindGPU, Class: "0x030200", MaxLinkSpeed: "32.0 GT/s PCIe", MaxLinkWidth: 16, NUMANode: i / 4},
			facts.PCIDevice{Address: nic, Kind: facts.KindInfiniBand, Class: "0x020700", MaxLinkSpeed: "32.0 GT/s PCIe", MaxLinkWidth: 16, NUMANode: i / 4, RDMADevs: []string{fmt.Sprintf("mlx5_ib%d", i)}})
	}
	return hw, f
}

func node(hw *spec.Hardware, want bool) *spec.Node {
	return &spec.Node{Name: "n", Hardware: hw, Affinity: &spec.Affinity{NCCLTopoFile: spec.Attr[bool]{V: want, Set: true}}}
}

func TestRenderGolden(t *testing.T) {
	tests := map[string]func() (*spec.Hardware, *facts.Node){
		"azure-nd-h100-v5": vm,
		// An AMD VM whose description has no PCIe switches: devices sit
		// on the CPU's root ports; one NIC is Ethernet (RoCE), and the
		// host reports no link speed for it.
		"amd-root-ports": func() (*spec.Hardware, *facts.Node) {
			hw := &spec.Hardware{GPUs: []spec.HardwareGPU{{Index: 0, PCI: "0000:41:00.0", NUMA: 0}, {Index: 1, PCI: "0000:c1:00.0", NUMA: 1}},
				NICs: []spec.HardwareNIC{{Name: "mlx5_0", PCI: "0000:21:00.0", NUMA: 0, Link: "roce", RDMA: true}, {Name: "eth0", PCI: "0000:05:00.0", NUMA: 0, Link: "ethernet"}}}
			f := &facts.Node{Arch: "x86_64", Hypervisor: "kvm", CPU: facts.CPU{Vendor: "AuthenticAMD"},
				NUMA: []facts.NUMANode{{ID: 0, CPUs: "0-31,64-95"}, {ID: 1, CPUs: "32-63,96-127"}},
				PCI: []facts.PCIDevice{{Address: "0000:41:00.0", Kind: facts.KindGPU, Class: "0x030000", MaxLinkSpeed: "16.0 GT/s PCIe", MaxLinkWidth: 16},
					{Address: "0000:c1:00.0", Kind: facts.KindGPU, Class: "0x030000", MaxLinkSpeed: "16.0 GT/s PCIe", MaxLinkWidth: 16},
					{Address: "0000:21:00.0", Kind: facts.KindEthernet, Class: "0x020000", RDMADevs: []string{"mlx5_0"}}}}
			return hw, f
		},
	}
	for name, mk := range tests {
		t.Run(name, func(t *testing.T) {
			hw, f := mk()
			if write, why := Decide(node(hw, true), f); !write {
				t.Fatalf("Decide: not written: %s", why)
			}
			got, err := Render(hw, f, "test header")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".xml")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s differs (go test -update rewrites it):\n%s", path, got)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	tests := map[string]struct {
		change func(n *spec.Node, f *facts.Node)
		why    string
	}{
		"flattened vm": {},
		"not asked":    {change: func(n *spec.Node, _ *facts.Node) { n.Affinity.NCCLTopoFile.V = false }},
		"bare metal":   {change: func(_ *spec.Node, f *facts.Node) { f.Hypervisor = "" }, why: "not a virtual machine"},
		// A VM that shows its switches: NCCL sees the layout itself.
		"vm with switches": {change: func(_ *spec.Node, f *facts.Node) {
			f.PCI[0].Parents = []string{"0000:00:01.0", "0000:01:00.0"}
			f.PCI[1].Parents = []string{"0000:00:01.0", "0000:01:00.0"}
		}, why: "GPU 0001:00:00.0 and NIC 0101:00:00.0 under one bridge"},
		"bare-metal addresses": {change: func(n *spec.Node, _ *facts.Node) { n.Hardware.GPUs[3].PCI = "0000:61:00.0" }, why: "PCI addresses 0000:61:00.0 are not on this host"},
		"no gpus described":    {change: func(n *spec.Node, _ *facts.Node) { n.Hardware.GPUs = nil }, why: "lists no GPUs"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			hw, f := vm()
			n := node(hw, true)
			if tc.change != nil {
				tc.change(n, f)
			}
			write, why := Decide(n, f)
			wantWrite := tc.why == "" && n.Affinity.NCCLTopoFile.V
			if write != wantWrite || !strings.Contains(why, tc.why) {
				t.Errorf("Decide = %v, %q; want %v, %q", write, why, wantWrite, tc.why)
			}
		})
	}
}

func TestAffinityMask(t *testing.T) {
	f := &facts.Node{NUMA: []facts.NUMANode{{ID: 0, CPUs: "0-15,32-47"}, {ID: 1, CPUs: "16-31,48-63"}, {ID: 2, CPUs: "64"}}}
	for numa, want := range map[int]string{0: "0000ffff,0000ffff", 1: "ffff0000,ffff0000", 2: "00000001,00000000,00000000"} {
		if got, err := affinity(f, numa); err != nil || got != want {
			t.Errorf("node %d: %q, %v; want %q", numa, got, err, want)
		}
	}
	if _, err := affinity(f, 3); err == nil {
		t.Error("a NUMA node the host lacks gave a mask")
	}
}

func TestRenderNeedsIntelModel(t *testing.T) {
	hw, f := vm()
	f.CPU.Family = 0
	if _, err := Render(hw, f, "h"); err == nil || !strings.Contains(err.Error(), "family and model are unknown") {
		t.Errorf("Intel without family: %v", err)
	}
}
