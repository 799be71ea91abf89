package verify

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
)

// railSpec pairs two GPUs with compute rails of the HGX H100 module (400
// Gb/s InfiniBand NDR ports), names a third rail for NCCL only, with its
// second port, and leaves the storage NIC mlx5_1 unnamed.
const railSpec = `
module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}
node "n" {
  hosts    = ["gpu1"]
  hardware = module.hgx.hardware
  affinity {
    gpu_nic     = { 0 = "mlx5_0", 1 = "mlx5_3" }
    nccl_ib_hca = ["=mlx5_0", "mlx5_3", "mlx5_4:2"]
  }
}`

func ndrPort(n int) facts.RDMAPort {
	return facts.RDMAPort{Port: n, LinkLayer: "InfiniBand", Rate: "400 Gb/sec (4X NDR)", State: "4: ACTIVE", PhysState: "5: LinkUp"}
}

func gen5x16(addr, dev string) facts.PCIDevice {
	return facts.PCIDevice{Address: addr, Kind: facts.KindInfiniBand, RDMADevs: []string{dev},
		CurrentLinkSpeed: "32.0 GT/s PCIe", MaxLinkSpeed: "32.0 GT/s PCIe", CurrentLinkWidth: 16, MaxLinkWidth: 16}
}

// railHost is a healthy host for railSpec: every rail up at NDR, Gen5 x16,
// and the storage NIC mlx5_1 down (it is not cabled).
func railHost() *facts.Node {
	down := facts.RDMAPort{Port: 1, LinkLayer: "Ethernet", Rate: "10 Gb/sec (4X)", State: "1: DOWN", PhysState: "3: Disabled"}
	return &facts.Node{
		PCI: []facts.PCIDevice{gen5x16("0000:18:00.0", "mlx5_0"), gen5x16("0000:29:00.0", "mlx5_1"), gen5x16("0000:40:00.0", "mlx5_3"), gen5x16("0000:4f:00.0", "mlx5_4")},
		RDMA: []facts.RDMADevice{
			{Name: "mlx5_0", Address: "0000:18:00.0", Ports: []facts.RDMAPort{ndrPort(1)}},
			{Name: "mlx5_1", Address: "0000:29:00.0", Ports: []facts.RDMAPort{down}},
			{Name: "mlx5_3", Address: "0000:40:00.0", Ports: []facts.RDMAPort{ndrPort(1)}},
			{Name: "mlx5_4", Address: "0000:4f:00.0", Ports: []facts.RDMAPort{down, ndrPort(2)}},
		},
	}
}

func TestCheckNICLinks(t *testing.T) {
	n := loadSpecNode(t, railSpec)
	type want struct{ id, status, msg string }
	pass := func(id string) want { return want{id, "pass", ""} }
	healthy := []want{pass("nic.link[mlx5_0]"), pass("nic.link[mlx5_3]"), pass("nic.link[mlx5_4]"),
		pass("nic.pcie_link[mlx5_0]"), pass("nic.pcie_link[mlx5_3]"), pass("nic.pcie_link[mlx5_4]")}
	with := func(w ...want) []want {
		out := append([]want(nil), healthy...)
		for _, x := range w {
			for i := range out {
				if out[i].id == x.id {
					out[i] = x
				}
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		change func(f *facts.Node)
		want   []want
	}{
		// mlx5_1 (storage, unnamed) and mlx5_4's port 1 (not named by
		// nccl_ib_hca's mlx5_4:2) are down and judged by nothing.
		{name: "healthy", change: func(*facts.Node) {}, want: healthy},
		{name: "rail down, no cable", change: func(f *facts.Node) {
			f.RDMA[2].Ports[0].State, f.RDMA[2].Ports[0].PhysState, f.RDMA[2].Ports[0].Rate = "1: DOWN", "2: Polling", "10 Gb/sec (4X SDR)"
		}, want: with(want{"nic.link[mlx5_3]", "fail", "mlx5_3 port 1 (00000000:40:00.0): port state DOWN, physical state Polling: no link partner (reseat or replace the cable or transceiver"})},
		{name: "rail down, port disabled", change: func(f *facts.Node) {
			f.RDMA[0].Ports[0].State, f.RDMA[0].Ports[0].PhysState = "1: DOWN", "3: Disabled"
		}, want: with(want{"nic.link[mlx5_0]", "fail", "mlx5_0 port 1 (00000000:18:00.0): port state DOWN, physical state Disabled: the port is disabled"})},
		{name: "rail at EDR on NDR hardware", change: func(f *facts.Node) {
			f.RDMA[0].Ports[0].Rate = "100 Gb/sec (4X EDR)"
		}, want: with(want{"nic.link[mlx5_0]", "fail", "mlx5_0 port 1 (00000000:18:00.0): rate 100 Gb/sec (4X EDR), below the 400 Gb/s the hardware declares"})},
		{name: "rail at HDR on NDR hardware", change: func(f *facts.Node) {
			f.RDMA[1+1].Ports[0].Rate = "200 Gb/sec (4X HDR)"
		}, want: with(want{"nic.link[mlx5_3]", "fail", "`ibstat mlx5_3` shows the rate"})},
		{name: "subnet manager missing", change: func(f *facts.Node) { f.RDMA[0].Ports[0].State = "2: INIT" },
			want: with(want{"nic.link[mlx5_0]", "fail", "port state INIT with the link up: the subnet manager has not activated the port"})},
		{name: "Ethernet where InfiniBand is declared", change: func(f *facts.Node) { f.RDMA[0].Ports[0].LinkLayer = "Ethernet" },
			want: with(want{"nic.link[mlx5_0]", "fail", "link layer Ethernet, the hardware declares InfiniBand"})},
		{name: "named port down", change: func(f *facts.Node) { f.RDMA[3].Ports[1].State, f.RDMA[3].Ports[1].PhysState = "1: DOWN", "2: Polling" },
			want: with(want{"nic.link[mlx5_4]", "fail", "mlx5_4 port 2 (00000000:4F:00.0)"})},
		{name: "named port absent", change: func(f *facts.Node) { f.RDMA[3].Ports = f.RDMA[3].Ports[:1] },
			want: with(want{"nic.link[mlx5_4]", "fail", "mlx5_4 port 2 (00000000:4F:00.0): no such port"})},
		{name: "rail device gone", change: func(f *facts.Node) { f.RDMA = append(f.RDMA[:2], f.RDMA[3]) },
			want: []want{pass("nic.link[mlx5_0]"), {"nic.link[mlx5_3]", "fail", "mlx5_3 (named in affinity.gpu_nic (GPU 1), affinity.nccl_ib_hca) is not on this host"},
				pass("nic.link[mlx5_4]"), pass("nic.pcie_link[mlx5_0]"), pass("nic.pcie_link[mlx5_4]")}},
		{name: "faster than declared", change: func(f *facts.Node) { f.RDMA[0].Ports[0].Rate = "800 Gb/sec (4X XDR)" }, want: healthy},
		{name: "NIC at x8", change: func(f *facts.Node) { f.PCI[0].CurrentLinkWidth = 8 },
			want: with(want{"nic.pcie_link[mlx5_0]", "fail", "downgraded PCIe link on mlx5_0 (00000000:18:00.0): width x8 below x16"})},
		{name: "NIC at Gen3", change: func(f *facts.Node) { f.PCI[2].CurrentLinkSpeed = "8.0 GT/s PCIe" },
			want: with(want{"nic.pcie_link[mlx5_3]", "fail", "generation 3 below 5"})},
		// A Gen5 NIC in a Gen4 slot trains to Gen4: capped, not degraded.
		{name: "Gen5 NIC in a Gen4 slot", change: func(f *facts.Node) {
			f.PCI[0].CurrentLinkSpeed, f.PCI[0].PortMaxLinkSpeed, f.PCI[0].PortMaxLinkWidth = "16.0 GT/s PCIe", "16.0 GT/s PCIe", 16
		}, want: healthy},
		// A virtual function's sysfs may not know its link speed.
		{name: "speed unknown, width known", change: func(f *facts.Node) { f.PCI[0].CurrentLinkSpeed = "Unknown" }, want: healthy},
		{name: "speed and width unknown", change: func(f *facts.Node) { f.PCI[0].CurrentLinkSpeed, f.PCI[0].CurrentLinkWidth = "Unknown", 0 },
			want: with(want{"nic.pcie_link[mlx5_0]", "skip", "sysfs gives no PCIe speed or width it can compare"})},
		{name: "no PCIe link in sysfs", change: func(f *facts.Node) { f.PCI[0].CurrentLinkSpeed, f.PCI[0].CurrentLinkWidth = "", 0 },
			want: with(want{"nic.pcie_link[mlx5_0]", "skip", "sysfs gives no PCIe link"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := railHost()
			tc.change(f)
			got := checkNICLinks(Expectation{KB: testKB, Spec: n}, f)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d checks, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				r := got[i]
				if r.ID != w.id || string(r.Status) != w.status || !strings.Contains(r.Message, w.msg) || (w.status == "pass") != (r.Message == "") {
					t.Errorf("check %d: %s %s %q\nwant %s %s with %q", i, r.ID, r.Status, r.Message, w.id, w.status, w.msg)
				}
			}
		})
	}
}

// The expectation says what is judged: a rail the hardware block lists is
// held to its rate and link layer; one it does not list to state only.
func TestCheckNICLinkExpected(t *testing.T) {
	got := checkNICLinks(Expectation{KB: testKB, Spec: loadSpecNode(t, railSpec)}, railHost())
	if r, _ := byID(got, "nic.link[mlx5_0]"); r.Expected != "port 1: ACTIVE, LinkUp, 400 Gb/s, InfiniBand" || r.Observed != "port 1: 4: ACTIVE, 5: LinkUp, 400 Gb/sec (4X NDR), InfiniBand" {
		t.Errorf("mlx5_0: expected %q observed %q", r.Expected, r.Observed)
	}
	bare := loadSpecNode(t, `
node "n" {
  hosts = ["gpu1"]
  affinity {
    nccl_ib_hca = ["mlx5_0"]
  }
}`)
	f := railHost()
	f.RDMA[0].Ports[0].Rate = "100 Gb/sec (4X EDR)"
	got = checkNICLinks(Expectation{KB: testKB, Spec: bare}, f)
	r, _ := byID(got, "nic.link[mlx5_0]")
	if r.Status != StatusPass || !strings.Contains(r.Expected, "rate and link layer not judged: the hardware block does not list mlx5_0") {
		t.Errorf("without hardware: %+v", r)
	}
	// No rail named: nothing judged, even with a port down.
	if got := checkNICLinks(Expectation{KB: testKB, Spec: specNode(t)}, railHost()); len(got) != 0 {
		t.Errorf("emitted without rails: %+v", got)
	}
}
