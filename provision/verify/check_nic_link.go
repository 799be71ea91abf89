package verify

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/niclink"
)

// checkNICLinks judges every compute rail's ports (nic.link[DEV]) and the
// PCIe link of its NIC (nic.pcie_link[DEV]). A rail that is down or up at
// a fraction of its rate passes every single-node test: NCCL routes
// around a dead port or slows the whole ring to the slow one, so the
// first sign is a multi-node job that runs at half speed. The rails are
// those the spec uses for GPU traffic (niclink.Rails); other ports are
// reported by NICPorts, not judged.
func checkNICLinks(exp Expectation, f *facts.Node) []CheckResult {
	if f == nil || exp.Spec == nil {
		return nil
	}
	rails := niclink.Rails(exp.Spec, niclink.HostDevices(f))
	var links, pcie []CheckResult
	for _, rail := range rails {
		want := niclink.WantOf(exp.Spec.Hardware, rail.Device)
		links = append(links, checkNICLink(rail, want, f))
		if r, ok := checkNICPCIe(rail, f); ok {
			pcie = append(pcie, r)
		}
	}
	return append(links, pcie...)
}

func checkNICLink(rail niclink.Rail, want niclink.Want, f *facts.Node) CheckResult {
	r := CheckResult{ID: CheckNICLink.NIC(rail.Device)}
	var expected []string
	for _, p := range rail.Ports {
		expected = append(expected, fmt.Sprintf("port %d: %s", p, want))
	}
	r.Expected = strings.Join(expected, "; ")
	if !want.Declared() {
		r.Expected += " (rate and link layer not judged: the hardware block does not list " + rail.Device + ")"
	}
	d, ok := f.RDMADevice(rail.Device)
	if !ok {
		r.Status, r.Observed = StatusFail, "absent"
		r.Message = fmt.Sprintf("%s (named in %s) is not on this host: no /sys/class/infiniband/%s. Its driver did not load (mlx5_ib; see dmesg) or the card is missing or dead: check `ibstat` and `lspci`, reseat or replace the card, or fix the spec's name",
			rail.Device, strings.Join(rail.Named, ", "), rail.Device)
		return r
	}
	bus := d.Address
	if bus == "" {
		bus = "unknown PCI address"
	}
	var observed, bad []string
	for _, pn := range rail.Ports {
		var fp *facts.RDMAPort
		for i := range d.Ports {
			if d.Ports[i].Port == pn {
				fp = &d.Ports[i]
			}
		}
		if fp == nil {
			observed = append(observed, fmt.Sprintf("port %d: absent", pn))
			bad = append(bad, fmt.Sprintf("%s port %d (%s): no such port (the device has %d)", rail.Device, pn, bus, len(d.Ports)))
			continue
		}
		observed = append(observed, fmt.Sprintf("port %d: %s", pn, portWords(*fp)))
		for _, fault := range niclink.Judge(rail.Device, niclink.FromFacts(*fp), want) {
			bad = append(bad, fmt.Sprintf("%s port %d (%s): %s", rail.Device, pn, bus, fault))
		}
	}
	r.Observed = strings.Join(observed, "; ")
	r.Status = StatusPass
	if len(bad) > 0 {
		r.Status = StatusFail
		r.Message = strings.Join(bad, "; ")
	}
	return r
}

// portWords is a port as sysfs shows it: "4: ACTIVE, 5: LinkUp, 400 Gb/sec
// (4X NDR), InfiniBand".
func portWords(p facts.RDMAPort) string {
	or := func(s string) string {
		if s = strings.TrimSpace(s); s == "" {
			return "?"
		}
		return s
	}
	return fmt.Sprintf("%s, %s, %s, %s", or(p.State), or(p.PhysState), or(p.Rate), or(p.LinkLayer))
}

// checkNICPCIe judges the PCIe link of a rail's NIC against the most it
// can train to. A NIC at x8 of x16, or Gen3 of Gen5, caps the rail below
// its port rate: a ConnectX-7 at 400 Gb/s needs Gen5 x16.
func checkNICPCIe(rail niclink.Rail, f *facts.Node) (CheckResult, bool) {
	d, ok := f.RDMADevice(rail.Device)
	if !ok {
		return CheckResult{}, false
	}
	var pci *facts.PCIDevice
	for i := range f.PCI {
		if f.PCI[i].Address == d.Address {
			pci = &f.PCI[i]
		}
	}
	r := CheckResult{ID: CheckNICPCIeLink.NIC(rail.Device)}
	if pci == nil || (pci.CurrentLinkSpeed == "" && pci.CurrentLinkWidth == 0) {
		r.Status, r.Message = StatusSkip, fmt.Sprintf("%s (%s): sysfs gives no PCIe link (current_link_speed/width)", rail.Device, d.Address)
		return r, true
	}
	l := NICPCIeLinkOf(*pci)
	r.Observed = fmt.Sprintf("Gen%d x%d", l.Gen, l.Width)
	r.Expected = fmt.Sprintf("Gen%d x%d", l.WantGen, l.WantWidth)
	if l.PortCapped {
		r.Expected += fmt.Sprintf(" (the upstream port's maximum; the NIC's own is Gen%d x%d)", l.DeviceGen, l.DeviceWidth)
	}
	var bad []string
	if l.Gen < l.WantGen {
		bad = append(bad, fmt.Sprintf("generation %d below %d", l.Gen, l.WantGen))
	}
	if l.Width < l.WantWidth {
		bad = append(bad, fmt.Sprintf("width x%d below x%d", l.Width, l.WantWidth))
	}
	r.Status = StatusPass
	if len(bad) > 0 {
		r.Status = StatusFail
		r.Message = fmt.Sprintf("downgraded PCIe link on %s (%s): %s; the rail cannot reach its port rate (reseat the NIC or check its slot or riser; a slot capped in the BIOS: check its PCIe setting)",
			rail.Device, pci.Address, strings.Join(bad, ", "))
	}
	return r, true
}

// NICPCIeLink is a NIC's PCIe link and the most it can train to.
type NICPCIeLink struct {
	// Gen and Width are the link now.
	Gen, Width int
	// DeviceGen and DeviceWidth are the NIC's own maximum.
	DeviceGen, DeviceWidth int
	// WantGen and WantWidth are the lower of the NIC's and the upstream
	// port's maximum (the NIC's alone when the port's is unknown).
	WantGen, WantWidth int
	// PortCapped is true when the upstream port lowers WantGen or WantWidth.
	PortCapped bool
}

// NICPCIeLinkOf reads d's link from its sysfs attributes.
func NICPCIeLinkOf(d facts.PCIDevice) NICPCIeLink {
	l := NICPCIeLink{Gen: facts.LinkGen(d.CurrentLinkSpeed), Width: d.CurrentLinkWidth,
		DeviceGen: facts.LinkGen(d.MaxLinkSpeed), DeviceWidth: d.MaxLinkWidth}
	l.WantGen, l.WantWidth = l.DeviceGen, l.DeviceWidth
	if g := facts.LinkGen(d.PortMaxLinkSpeed); g > 0 && g < l.WantGen {
		l.WantGen, l.PortCapped = g, true
	}
	if w := d.PortMaxLinkWidth; w > 0 && w < l.WantWidth {
		l.WantWidth, l.PortCapped = w, true
	}
	return l
}
