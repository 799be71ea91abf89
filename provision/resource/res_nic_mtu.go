package resource

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/facts"
)

// netdevPattern is a Linux interface name (at most 15 bytes, IFNAMSIZ-1).
var netdevPattern = lazyre.New(`^[A-Za-z0-9_.\-]{1,15}$`)

// nicMTU sets the MTU of each RDMA device's network interface that
// affinity { mtu } names, with `ip link set`, for the running system only.
// Where the MTU persists depends on who configures the interface (netplan,
// NetworkManager, ifupdown, ifcfg files, a cloud agent), and one of them
// may reset it when it next brings the link up, so gpuform does not write
// their files: plan says so, and verify's nic.mtu check fails a node whose
// MTU differs after a reboot.
type nicMTU struct {
	base
	// want maps "mlx5_0 (ibp24s0)" to the interface and its MTU.
	want map[string]mtuTarget
}

type mtuTarget struct {
	netdev string
	mtu    int
}

// nicMTUReads declares what nic_mtu reads back on a node: nothing beyond the
// node facts every resource shares (packages, devices).
func nicMTUReads() facts.Reads { return facts.Reads{} }

// buildNICMTU plans the MTUs of affinity { mtu }; an RDMA device the host
// lacks, or one without a network interface, is a warning, not a change.
func buildNICMTU(in *buildInput) ([]Resource, []string, error) {
	a := in.n.Affinity
	if a == nil || len(a.MTU) == 0 {
		return nil, nil, nil
	}
	r := &nicMTU{base: base{name: NICMTU}, want: map[string]mtuTarget{}}
	var warnings []string
	for _, name := range slices.Sorted(maps.Keys(a.MTU)) {
		d, ok := in.f.RDMADevice(name)
		switch {
		case !ok:
			warnings = append(warnings, fmt.Sprintf("mtu: %s is not on this host; its MTU is not set", name))
			continue
		case len(d.NetDevs) == 0:
			warnings = append(warnings, fmt.Sprintf("mtu: %s has no network interface (IPoIB not loaded?); its MTU is not set", name))
			continue
		}
		for _, nd := range d.NetDevs {
			if err := check(netdevPattern, "interface name", nd); err != nil {
				return nil, nil, err
			}
			r.want[name+" ("+nd+")"] = mtuTarget{netdev: nd, mtu: a.MTU[name].V}
		}
	}
	warnings = append(warnings, "mtu: set with `ip link set` until the next reboot only; make it persistent where the interfaces are configured (netplan, NetworkManager, ifupdown, ifcfg); verify's nic.mtu check fails a node whose MTU differs")
	return []Resource{r}, warnings, nil
}

func (r *nicMTU) Diff(n *facts.Node) (Change, error) {
	before, after := Values{}, Values{}
	var steps []Step
	for _, k := range slices.Sorted(maps.Keys(r.want)) {
		t := r.want[k]
		after[k] = NumberVal(t.mtu)
		before[k] = StringVal("(unknown)")
		for _, d := range n.RDMA {
			if m, ok := d.MTU[t.netdev]; ok && slices.Contains(d.NetDevs, t.netdev) {
				before[k] = NumberVal(m)
			}
		}
		if before[k] != after[k] {
			steps = append(steps, scriptStep(fmt.Sprintf("set the MTU of %s to %d (until reboot)", t.netdev, t.mtu),
				nicMTUScript, t.netdev, strconv.Itoa(t.mtu)))
		}
	}
	c := r.change(before, after)
	if len(steps) == 0 {
		c.Action = NoOp
		return c, nil
	}
	c.Steps = steps
	return c, nil
}
