// Package niclink judges the link of each compute rail: the RDMA ports a
// node's spec pairs with a GPU or names for NCCL. A rail whose port is
// down, or up at a lower rate than the hardware declares, passes every
// single-node test and then halves (or stops) every multi-node job that
// crosses it; AzNHC, LBNL NHC and Meta's GCM check the same four facts
// (port state, physical state, rate, link layer) per port.
//
// It reads the facts probe's view of /sys/class/infiniband and the spec;
// verify (nic.link), graph (its problems) and the reports use the same
// judgement, so they cannot disagree about a rail.
//
// Which ports are judged: port 1 of every rail device, or the ports
// NCCL_IB_HCA names for it ("mlx5_0:2"). gpuform's own binding points a
// job at DEV:1 (UCX_NET_DEVICES), and the second port of a dual-port card
// is as often uncabled or on the storage network as it is a rail, so a
// port the spec does not name is reported, not judged. Devices and ports
// the spec names nowhere (storage and management NICs) are reported only.
package niclink

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/bind"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// Link layers as sysfs's link_layer prints them.
const (
	LayerInfiniBand = "InfiniBand"
	LayerEthernet   = "Ethernet"
)

// Port is one RDMA port's link, normalised from whichever tool showed it
// (sysfs, ibstatus, ibstat).
type Port struct {
	// Port is the port number (from 1).
	Port int
	// State is the logical port state's name in capitals: "ACTIVE",
	// "DOWN", "INIT", "ARMED"; "" when unknown.
	State string
	// PhysState is the physical state's name as the IBTA spells it:
	// "LinkUp", "Polling", "Disabled", …; "" when unknown.
	PhysState string
	// RateGbps is the signalling rate in Gb/s; 0 when unknown.
	RateGbps float64
	// Rate is the rate as read ("400 Gb/sec (4X NDR)"), for messages.
	Rate string
	// LinkLayer is LayerInfiniBand or LayerEthernet; "" when unknown.
	LinkLayer string
}

// FromFacts normalises a port as the facts probe read it from sysfs.
func FromFacts(p facts.RDMAPort) Port {
	return Port{Port: p.Port, State: ParseState(p.State), PhysState: ParsePhysState(p.PhysState),
		RateGbps: ParseRate(p.Rate), Rate: strings.TrimSpace(p.Rate), LinkLayer: normLayer(p.LinkLayer)}
}

// ParseState reads a logical port state in the forms the tools print:
// sysfs and ibstatus "4: ACTIVE", ibstat "Active", ibv_devinfo
// "PORT_ACTIVE (4)". It returns the name in capitals ("ACTIVE").
func ParseState(s string) string {
	s = strings.TrimSpace(s)
	if _, name, ok := strings.Cut(s, ":"); ok {
		s = name
	}
	if name, _, ok := strings.Cut(s, "("); ok {
		s = name
	}
	s = strings.ToUpper(strings.TrimSpace(s))
	return strings.TrimPrefix(s, "PORT_")
}

// physStates are the IBTA's physical port state names, keyed by lower
// case, as sysfs prints them (drivers/infiniband/core/sysfs.c phys_state_to_str).
var physStates = map[string]string{
	"sleep": "Sleep", "polling": "Polling", "disabled": "Disabled",
	"portconfigurationtraining": "PortConfigurationTraining", "linkup": "LinkUp",
	"linkerrorrecovery": "LinkErrorRecovery", "phytest": "Phy Test",
}

// ParsePhysState reads a physical port state: sysfs and ibstatus
// "5: LinkUp", ibstat "LinkUp".
func ParsePhysState(s string) string {
	s = strings.TrimSpace(s)
	if _, name, ok := strings.Cut(s, ":"); ok {
		s = strings.TrimSpace(name)
	}
	if v, ok := physStates[strings.ToLower(strings.ReplaceAll(s, " ", ""))]; ok {
		return v
	}
	return s
}

// ParseRate reads a port rate in Gb/s: sysfs and ibstatus
// "400 Gb/sec (4X NDR)", ibstat "400". 0 when it is not a number.
func ParseRate(s string) float64 {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}

func normLayer(s string) string {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "infiniband":
		return LayerInfiniBand
	case "ethernet":
		return LayerEthernet
	}
	return strings.TrimSpace(s)
}

// Want is what the spec declares for a rail's ports.
type Want struct {
	// LinkLayer is LayerInfiniBand or LayerEthernet (RoCE runs on an
	// Ethernet link layer); "" when not declared.
	LinkLayer string
	// RateGbps is the declared port speed; 0 when not declared.
	RateGbps int
}

// Declared reports whether the hardware block says anything about the port.
func (w Want) Declared() bool { return w.LinkLayer != "" || w.RateGbps > 0 }

// String is the expectation in words: "ACTIVE, LinkUp, 400 Gb/s, InfiniBand".
func (w Want) String() string {
	s := "ACTIVE, LinkUp"
	if w.RateGbps > 0 {
		s += fmt.Sprintf(", %d Gb/s", w.RateGbps)
	}
	if w.LinkLayer != "" {
		s += ", " + w.LinkLayer
	}
	return s
}

// WantOf is what hardware declares for device dev (its `nics` entry);
// the zero Want when hw is nil or does not list it.
func WantOf(hw *spec.Hardware, dev string) Want {
	if hw == nil {
		return Want{}
	}
	n, ok := hw.NIC(dev)
	if !ok {
		return Want{}
	}
	w := Want{RateGbps: n.SpeedGbps}
	switch n.Link {
	case "infiniband":
		w.LinkLayer = LayerInfiniBand
	case "ethernet", "roce":
		w.LinkLayer = LayerEthernet
	}
	return w
}

// Judge returns what is wrong with port p of rail device dev that should be
// w, each fault with what it means and what to do; none when the port is
// healthy. A rate above the declared one passes (a faster fabric is not a
// fault).
func Judge(dev string, p Port, w Want) []string {
	var bad []string
	phys := p.PhysState
	// The physical state says why a port is down; the logical state
	// follows it, so a port down for want of a link is one fault.
	state := ""
	switch p.State {
	case "":
		state = "port state unreadable"
	case "ACTIVE":
	default:
		state = "port state " + p.State
	}
	physFault := ""
	switch {
	case phys == "":
		physFault = "physical state unreadable"
	case phys == "Polling":
		physFault = "physical state Polling: no link partner (reseat or replace the cable or transceiver; check that the switch port is enabled)"
	case phys == "Disabled":
		physFault = "physical state Disabled: the port is disabled (check the switch port and that the port was not disabled on the host: `ibportstate`, `mlxlink -d DEV`)"
	case phys != "LinkUp":
		physFault = fmt.Sprintf("physical state %s, not LinkUp (reseat or replace the cable or transceiver; check the switch port)", phys)
	}
	switch {
	case physFault != "" && state != "":
		bad = append(bad, state+", "+physFault)
	case physFault != "":
		bad = append(bad, physFault)
	case state == "":
	case p.State == "INIT" || p.State == "ARMED":
		bad = append(bad, state+" with the link up: the subnet manager has not activated the port (check that opensm or UFM runs on the fabric and sees this port)")
	default:
		bad = append(bad, state+" with the link up, not ACTIVE (`ibstat DEV` shows the port)")
	}
	if w.LinkLayer != "" && p.LinkLayer != w.LinkLayer {
		have := p.LinkLayer
		if have == "" {
			have = "unknown"
		}
		bad = append(bad, fmt.Sprintf("link layer %s, the hardware declares %s (set the port's type with mlxconfig's LINK_TYPE_P<port> on the card's PCI address and reboot, or fix the hardware block's nic link)", have, w.LinkLayer))
	}
	// A port that is down reports its slowest rate (10 Gb/s for 4X SDR);
	// the rate says something only about a port that is up.
	if w.RateGbps > 0 && phys == "LinkUp" {
		switch {
		case p.RateGbps == 0:
			bad = append(bad, fmt.Sprintf("rate unreadable (%q), the hardware declares %d Gb/s", p.Rate, w.RateGbps))
		case p.RateGbps < float64(w.RateGbps):
			bad = append(bad, fmt.Sprintf("rate %s, below the %d Gb/s the hardware declares: a degraded cable or transceiver, or a switch port set to a lower speed (reseat or replace the cable or transceiver; check the switch port; `ibstat DEV` shows the rate, `mlxlink -d DEV -m` the cable)", p.Rate, w.RateGbps))
		}
	}
	for i := range bad {
		bad[i] = strings.ReplaceAll(bad[i], "DEV", dev)
	}
	return bad
}

// Rail is one RDMA device the spec uses for GPU traffic, with why.
type Rail struct {
	// Device is the RDMA device name ("mlx5_0").
	Device string
	// Ports are the ports judged: those NCCL_IB_HCA names for the device,
	// else port 1.
	Ports []int
	// Named says where the spec names it: "affinity.gpu_nic (GPU 3)",
	// "affinity.nccl_ib_hca", "affinity.mtu".
	Named []string
}

// Rails are the compute rails of node n on a host whose RDMA devices are
// have: every device affinity.gpu_nic pairs with a GPU, every device
// affinity.mtu names, and every host device affinity.nccl_ib_hca selects
// (as NCCL reads the list: prefixes, "=" exact, "^" exclude), plus listed
// names that match no host device, so that a missing rail is judged too.
// Sorted by device name.
func Rails(n *spec.Node, have []string) []Rail {
	if n == nil || n.Affinity == nil {
		return nil
	}
	a := n.Affinity
	byDev := map[string]*Rail{}
	add := func(dev, why string) *Rail {
		r, ok := byDev[dev]
		if !ok {
			r = &Rail{Device: dev}
			byDev[dev] = r
		}
		if !slices.Contains(r.Named, why) {
			r.Named = append(r.Named, why)
		}
		return r
	}
	for _, idx := range slices.Sorted(maps.Keys(a.GPUNIC)) {
		if dev := a.GPUNIC[idx].V; dev != "" {
			add(dev, fmt.Sprintf("affinity.gpu_nic (GPU %d)", idx))
		}
	}
	for _, dev := range slices.Sorted(maps.Keys(a.MTU)) {
		add(dev, "affinity.mtu")
	}
	if len(a.NCCLIBHCA) > 0 {
		entries := make([]string, len(a.NCCLIBHCA))
		for i, e := range a.NCCLIBHCA {
			entries[i] = e.V
		}
		f := bind.ParseHCA(strings.Join(entries, ","))
		const why = "affinity.nccl_ib_hca"
		for _, dev := range have {
			if f.Selects(dev) {
				add(dev, why)
			}
		}
		if !f.Exclude {
			for _, e := range entries {
				e = strings.TrimLeft(strings.TrimSpace(e), "^=")
				name, port, _ := strings.Cut(e, ":")
				matched := false
				for _, dev := range have {
					if dev == name || !f.Exact && strings.HasPrefix(dev, name) {
						matched = true
					}
				}
				if !matched && name != "" {
					add(name, why)
				}
				if p, err := strconv.Atoi(port); err == nil && p > 0 {
					if r, ok := byDev[name]; ok && !slices.Contains(r.Ports, p) {
						r.Ports = append(r.Ports, p)
					}
				}
			}
		}
	}
	out := make([]Rail, 0, len(byDev))
	for _, dev := range slices.Sorted(maps.Keys(byDev)) {
		r := *byDev[dev]
		if len(r.Ports) == 0 {
			r.Ports = []int{1}
		}
		slices.Sort(r.Ports)
		out = append(out, r)
	}
	return out
}

// IsRailPort reports whether port of dev is judged among rails.
func IsRailPort(rails []Rail, dev string, port int) bool {
	for _, r := range rails {
		if r.Device == dev {
			return slices.Contains(r.Ports, port)
		}
	}
	return false
}

// HostDevices are the names of the host's RDMA devices, sorted.
func HostDevices(f *facts.Node) []string {
	if f == nil {
		return nil
	}
	names := make([]string, 0, len(f.RDMA))
	for _, d := range f.RDMA {
		names = append(names, d.Name)
	}
	slices.Sort(names)
	return names
}
