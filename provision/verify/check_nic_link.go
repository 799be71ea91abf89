package verify

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/internal/spelling"

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
	bus := spelling.BusID(d.Address)
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
	r.Observed = genWidthText(l.Gen, l.Width)
	r.Expected = genWidthText(l.WantGen, l.WantWidth)
	if l.PortCapped {
		r.Expected += fmt.Sprintf(" (the upstream port's maximum; the NIC's own is %s)", genWidthText(l.DeviceGen, l.DeviceWidth))
	}
	// A side sysfs cannot tell ("Unknown", as a virtual function may
	// print) is not judged: an unknown speed is not a slow one.
	genKnown, widthKnown := l.Gen > 0 && l.WantGen > 0, l.Width > 0 && l.WantWidth > 0
	if !genKnown && !widthKnown {
		r.Status, r.Message = StatusSkip, fmt.Sprintf("%s (%s): sysfs gives no PCIe speed or width it can compare (current %q x%d, max %q x%d)",
			rail.Device, pci.Address, pci.CurrentLinkSpeed, pci.CurrentLinkWidth, pci.MaxLinkSpeed, pci.MaxLinkWidth)
		return r, true
	}
	var bad []string
	if genKnown && l.Gen < l.WantGen {
		bad = append(bad, fmt.Sprintf("generation %d below %d", l.Gen, l.WantGen))
	}
	if widthKnown && l.Width < l.WantWidth {
		bad = append(bad, fmt.Sprintf("width x%d below x%d", l.Width, l.WantWidth))
	}
	r.Status = StatusPass
	if len(bad) > 0 {
		r.Status = StatusFail
		r.Message = fmt.Sprintf("downgraded PCIe link on %s (%s): %s; the rail cannot reach its port rate (reseat the NIC or check its slot or riser; a slot capped in the BIOS: check its PCIe setting)",
			rail.Device, spelling.BusID(pci.Address), strings.Join(bad, ", "))
	}
	return r, true
}

// genWidthText is "Gen5 x16", with "?" for what sysfs did not tell.
func genWidthText(gen, width int) string {
	g, w := "?", "?"
	if gen > 0 {
		g = fmt.Sprint(gen)
	}
	if width > 0 {
		w = fmt.Sprint(width)
	}
	return "Gen" + g + " x" + w
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

// NICPort is one RDMA port as verify read it, for the reports: judged
// when it is a compute rail's port (nic.link), reported only otherwise.
type NICPort struct {
	// Device is the RDMA device ("mlx5_0").
	Device string `json:"device"`
	// Port is the port number.
	Port int `json:"port"`
	// PCIBusID is the device's PCI address ("0000:18:00.0").
	PCIBusID string `json:"pci_bus_id,omitempty"`
	// NetDevs are the device's network interfaces.
	NetDevs []string `json:"netdevs,omitempty"`
	// State is the port state's name ("ACTIVE", "DOWN"); "" unknown.
	State string `json:"state"`
	// PhysState is the physical state's name ("LinkUp", "Polling").
	PhysState string `json:"phys_state"`
	// RateGbps is the port rate in Gb/s; 0 when unknown.
	RateGbps float64 `json:"rate_gbps"`
	// LinkLayer is "InfiniBand" or "Ethernet".
	LinkLayer string `json:"link_layer"`
	// Judged is true for a compute rail's port, which nic.link judged.
	Judged bool `json:"judged"`
	// Up is true when the port is ACTIVE and LinkUp.
	Up bool `json:"up"`
	// DeclaredRateGbps is the rate the hardware block declares for the
	// device; 0 when it does not list it.
	DeclaredRateGbps int `json:"declared_rate_gbps,omitempty"`
	// Named says where the spec names the device; empty for a port the
	// spec does not name.
	Named []string `json:"named_in,omitempty"`
}

// NICPorts lists every RDMA port of f, sorted by device and port, marking
// the compute rails' ports exp's spec judges.
func NICPorts(exp Expectation, f *facts.Node) []NICPort {
	if f == nil {
		return nil
	}
	var rails []niclink.Rail
	if exp.Spec != nil {
		rails = niclink.Rails(exp.Spec, niclink.HostDevices(f))
	}
	named := map[string][]string{}
	for _, r := range rails {
		named[r.Device] = r.Named
	}
	var out []NICPort
	for _, d := range f.RDMA {
		for _, fp := range d.Ports {
			p := niclink.FromFacts(fp)
			np := NICPort{Device: d.Name, Port: fp.Port, PCIBusID: d.Address, NetDevs: d.NetDevs, State: p.State, PhysState: p.PhysState,
				RateGbps: p.RateGbps, LinkLayer: p.LinkLayer, Judged: niclink.IsRailPort(rails, d.Name, fp.Port),
				Up: p.State == "ACTIVE" && p.PhysState == "LinkUp", Named: named[d.Name]}
			if exp.Spec != nil {
				np.DeclaredRateGbps = niclink.WantOf(exp.Spec.Hardware, d.Name).RateGbps
			}
			out = append(out, np)
		}
	}
	return out
}
