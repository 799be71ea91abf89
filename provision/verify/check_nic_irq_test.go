package verify

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
)

const nicSpec = `
node "n" {
  hosts = ["gpu1"]
  affinity {
    nic_irq_affinity = true
    mtu              = { mlx5_0 = 4092, mlx5_6 = 4092 }
  }
}`

// nicHost has mlx5_0 on NUMA node 0 and mlx5_6 on node 1, each pinned
// and at MTU 4092.
func nicHost() *facts.Node {
	return &facts.Node{
		NUMA: []facts.NUMANode{{ID: 0, CPUs: "0-3"}, {ID: 1, CPUs: "4-7"}},
		PCI: []facts.PCIDevice{
			{Address: "0000:18:00.0", NUMANode: 0, RDMADevs: []string{"mlx5_0"}, IRQs: []facts.IRQ{{Number: 30, CPUs: "0-3"}, {Number: 31, CPUs: "2"}}},
			{Address: "0000:9a:00.0", NUMANode: 1, RDMADevs: []string{"mlx5_6"}, IRQs: []facts.IRQ{{Number: 40, CPUs: "4-7"}}},
		},
		RDMA: []facts.RDMADevice{
			{Name: "mlx5_0", Address: "0000:18:00.0", NetDevs: []string{"ibp24s0"}, MTU: map[string]int{"ibp24s0": 4092}},
			{Name: "mlx5_6", Address: "0000:9a:00.0", NetDevs: []string{"ibp154s0"}, MTU: map[string]int{"ibp154s0": 4092}},
		},
	}
}

func TestCheckNICIRQAndMTU(t *testing.T) {
	n := loadSpecNode(t, nicSpec)
	for _, tc := range []struct {
		name   string
		change func(f *facts.Node)
		// irq and mtu are the statuses, with a message fragment when failing.
		irq, irqMsg, mtu, mtuMsg string
	}{
		{name: "pinned, MTUs right", change: func(*facts.Node) {}, irq: "pass", mtu: "pass"},
		// A subset of the node's CPUs (IRQ 31 on CPU 2) is within it.
		{name: "IRQ on every CPU", change: func(f *facts.Node) { f.PCI[1].IRQs[0].CPUs = "0-7" },
			irq: "fail", irqMsg: "mlx5_6 (0000:9a:00.0) (NUMA node 1, CPUs 4-7): IRQ 40 (0-7)", mtu: "pass"},
		{name: "IRQ unreadable", change: func(f *facts.Node) { f.PCI[0].IRQs[1].CPUs = "" },
			irq: "fail", irqMsg: "IRQ 31 (unreadable)", mtu: "pass"},
		{name: "driver not loaded", change: func(f *facts.Node) { f.PCI[0].IRQs = nil },
			irq: "fail", irqMsg: "mlx5_0 (0000:18:00.0) has no interrupts", mtu: "pass"},
		{name: "one node left at the default MTU", change: func(f *facts.Node) { f.RDMA[1].MTU["ibp154s0"] = 2044 },
			irq: "pass", mtu: "fail", mtuMsg: "mlx5_6 (ibp154s0) has MTU 2044, the spec says 4092"},
		{name: "NIC missing", change: func(f *facts.Node) { f.RDMA = f.RDMA[:1] },
			irq: "pass", mtu: "fail", mtuMsg: "mlx5_6 is not on this host"},
		{name: "no interface", change: func(f *facts.Node) { f.RDMA[0].NetDevs = nil },
			irq: "pass", mtu: "fail", mtuMsg: "mlx5_0 has no network interface"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := nicHost()
			tc.change(f)
			got := append(checkNICIRQ(Expectation{KB: testKB, Spec: n}, f), checkNICMTU(Expectation{KB: testKB, Spec: n}, f)...)
			for _, want := range []struct{ id, status, msg string }{{string(CheckNICIRQ), tc.irq, tc.irqMsg}, {string(CheckNICMTU), tc.mtu, tc.mtuMsg}} {
				r, ok := byID(got, want.id)
				if !ok || string(r.Status) != want.status || !strings.Contains(r.Message, want.msg) {
					t.Errorf("%s: %+v, want %s with %q", want.id, r, want.status, want.msg)
				}
			}
		})
	}
	// Not asked for: neither check is emitted.
	if got := append(checkNICIRQ(Expectation{KB: testKB, Spec: specNode(t)}, nicHost()), checkNICMTU(Expectation{KB: testKB, Spec: specNode(t)}, nicHost())...); len(got) != 0 {
		t.Errorf("emitted without the settings: %+v", got)
	}
}
