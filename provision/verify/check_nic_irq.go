package verify

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nicirq"
)

// checkNICIRQ judges where each RDMA NIC's interrupts may run when the spec
// asks for them pinned (affinity { nic_irq_affinity }): every IRQ of the
// NIC's PCI function must be allowed only on CPUs of the NIC's NUMA node.
// A NIC whose interrupts land on the other socket pays a cross-socket hop
// on every completion; irqbalance, a reboot without the boot unit, or an
// operator's echo are the usual causes.
func checkNICIRQ(exp Expectation, f *facts.Node) []CheckResult {
	if f == nil || !nicirq.Wanted(exp.Spec) {
		return nil
	}
	groups, warnings := nicirq.Groups(f)
	r := CheckResult{ID: string(CheckNICIRQ), Expected: "every RDMA NIC's IRQs on CPUs of its NUMA node"}
	var bad []string
	irqs := 0
	for _, g := range groups {
		irqs += len(g.IRQs)
		if len(g.IRQs) == 0 {
			bad = append(bad, g.Label()+" has no interrupts (is its driver loaded?)")
			continue
		}
		if out := g.Outside(); len(out) > 0 {
			bad = append(bad, fmt.Sprintf("%s (NUMA node %d, CPUs %s): IRQ %s", g.Label(), g.NUMA, g.CPUs, strings.Join(out, ", ")))
		}
	}
	bad = append(bad, warnings...)
	r.Observed = fmt.Sprintf("%d NIC(s), %d IRQs", len(groups), irqs)
	switch {
	case len(groups) == 0 && len(warnings) == 0:
		r.Status, r.Message = StatusFail, "the host has no RDMA NIC to pin"
	case len(bad) > 0:
		r.Status = StatusFail
		r.Message = strings.Join(bad, "; ") + "; run gpuform apply (it pins them and keeps irqbalance off them)"
	default:
		r.Status = StatusPass
	}
	return []CheckResult{r}
}

// checkNICMTU judges the MTU of each RDMA NIC's network interface against
// affinity { mtu }. A node whose MTU differs from its peers' fragments or
// drops what they send (RoCE) or falls back to smaller messages (IPoIB):
// a common cause of poor multi-node scaling. Every node of a node block
// is held to the same value, so a mismatch across them fails here too.
func checkNICMTU(exp Expectation, f *facts.Node) []CheckResult {
	if f == nil || exp.Spec == nil || exp.Spec.Affinity == nil || len(exp.Spec.Affinity.MTU) == 0 {
		return nil
	}
	want := exp.Spec.Affinity.MTU
	r := CheckResult{ID: string(CheckNICMTU)}
	var expected, observed, bad []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		m := want[name].V
		expected = append(expected, fmt.Sprintf("%s %d", name, m))
		d, ok := f.RDMADevice(name)
		switch {
		case !ok:
			bad = append(bad, name+" is not on this host")
			observed = append(observed, name+" absent")
			continue
		case len(d.NetDevs) == 0:
			bad = append(bad, name+" has no network interface (IPoIB not loaded?)")
			observed = append(observed, name+" no interface")
			continue
		}
		for _, nd := range d.NetDevs {
			have, ok := d.MTU[nd]
			if !ok {
				bad = append(bad, fmt.Sprintf("%s (%s): MTU unreadable", name, nd))
				observed = append(observed, fmt.Sprintf("%s %s ?", name, nd))
				continue
			}
			observed = append(observed, fmt.Sprintf("%s %s %d", name, nd, have))
			if have != m {
				bad = append(bad, fmt.Sprintf("%s (%s) has MTU %d, the spec says %d", name, nd, have, m))
			}
		}
	}
	r.Expected = strings.Join(expected, ", ")
	r.Observed = strings.Join(observed, ", ")
	r.Status = StatusPass
	if len(bad) > 0 {
		r.Status = StatusFail
		r.Message = strings.Join(bad, "; ") + "; set it where the interface is configured (netplan, NetworkManager, ifcfg) so it persists, e.g. now with `ip link set dev IF mtu N`"
	}
	return []CheckResult{r}
}
