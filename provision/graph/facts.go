package graph

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/niclink"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/spec"
)

// endpoint is a GPU or NIC with what the matrix needs to place it.
type endpoint struct {
	id      string
	name    string
	parents []string // PCIe bridges, root port first (facts); switch name (spec)
	numa    int
	rdma    bool
}

// FromFacts draws node n as the facts probe read it. decl, when not nil,
// is the spec's node block the host belongs to: its hardware, numa binds
// and affinity pairs are compared with what was read, and its hardware
// names the GPU model and the NVLink fabric the facts cannot see.
func FromFacts(n *facts.Node, decl *spec.Node) *Topology {
	t := &Topology{Source: SourceFacts}
	var hw *spec.Hardware
	if decl != nil {
		hw = decl.Hardware
	}
	t.Title = cpuTitle(n.CPU.Model, n.CPU.Sockets)
	if hw != nil && hw.Name != "" {
		t.Title = hw.Name + " · " + t.Title
	}

	// Sockets and NUMA nodes.
	sockets := max(n.CPU.Sockets, 1)
	for s := range sockets {
		b := Box{ID: socketID(s), Kind: KindSocket, Label: fmt.Sprintf("CPU socket %d", s)}
		if n.CPU.Model != "" {
			b.Detail = []string{n.CPU.Model}
		}
		t.Boxes = append(t.Boxes, b)
	}
	numaIDs := map[int]bool{}
	withCPUs := 0
	for _, nn := range n.NUMA {
		if nn.CPUs != "" {
			withCPUs++
		}
	}
	i := 0
	for _, nn := range n.NUMA {
		b := Box{ID: numaID(nn.ID), Kind: KindNUMA, Label: fmt.Sprintf("NUMA %d", nn.ID)}
		if nn.CPUs != "" {
			b.Parent = socketID(socketOf(i, withCPUs, sockets))
			b.Detail = append(b.Detail, "CPUs "+nn.CPUs)
			i++
		} else {
			// A node without CPUs is memory reached through a socket (GH200's
			// HBM, CXL); it hangs off the first socket, which is the only one
			// on the machines that have them.
			b.Parent = socketID(0)
			b.Detail = append(b.Detail, "no CPUs")
		}
		if nn.MemoryBytes > 0 {
			b.Detail = append(b.Detail, sizeText(nn.MemoryBytes))
		}
		numaIDs[nn.ID] = true
		t.Boxes = append(t.Boxes, b)
	}
	numaParent := func(numa int) string {
		if numaIDs[numa] {
			return numaID(numa)
		}
		if len(n.NUMA) > 0 {
			return numaID(n.NUMA[0].ID)
		}
		return socketID(0)
	}

	// PCIe bridges and devices. A chain is root port, then an upstream
	// and a downstream port per switch; the switch is drawn once, named by
	// its upstream port, and the downstream port is left out as it only
	// says which slot of the switch the device is in.
	seen := map[string]bool{}
	addBridges := func(d facts.PCIDevice) string {
		parent := numaParent(d.NUMANode)
		for i := 0; i < len(d.Parents); {
			addr := d.Parents[i]
			kind, label, id := KindSwitch, "PCIe switch", "pci:"+addr
			step := 2
			if i == 0 {
				kind, label, step = KindRootPort, "root port", 1
			}
			if !seen[id] {
				seen[id] = true
				t.Boxes = append(t.Boxes, Box{ID: id, Kind: kind, Label: label, Detail: []string{shortAddr(addr)}, Parent: parent})
			}
			parent = id
			i += step
		}
		return parent
	}

	var gpus, nics []endpoint
	// byName finds a NIC by RDMA device or netdev name, as the spec names it.
	byName := map[string]endpoint{}
	for idx, d := range n.NVIDIAGPUs() {
		parent := addBridges(d)
		model := ""
		if hw != nil {
			model = hw.GPUModel
		}
		if model == "" {
			model = pciName(d.Vendor, d.Device)
		}
		b := Box{ID: gpuID(idx), Kind: KindGPU, Label: fmt.Sprintf("GPU%d", idx), Address: d.Address, Detail: []string{model, d.Address}, Parent: parent, Link: pcieLink(d)}
		t.Boxes = append(t.Boxes, b)
		gpus = append(gpus, endpoint{id: b.ID, name: b.Label, parents: d.Parents, numa: d.NUMANode})
	}
	peerRates := fastestPorts(n)
	for _, d := range n.NICs() {
		parent := addBridges(d)
		name := d.Address
		switch {
		case len(d.RDMADevs) > 0:
			name = d.RDMADevs[0]
		case len(d.NetDevs) > 0:
			name = d.NetDevs[0]
		}
		var detail []string
		if len(d.RDMADevs) > 0 && len(d.NetDevs) > 0 {
			detail = append(detail, strings.Join(d.NetDevs, ", "))
		}
		detail = append(detail, pciName(d.Vendor, d.Device), d.Address)
		var noted []string
		for _, r := range d.RDMADevs {
			if rd, ok := n.RDMADevice(r); ok {
				for _, p := range rd.Ports {
					detail = append(detail, portText(p))
					if portNoted(p, peerRates) {
						noted = append(noted, portText(p))
					}
				}
			}
		}
		b := Box{ID: nicID(name), Kind: KindNIC, Label: name, Address: d.Address, Detail: detail, Noted: noted, Parent: parent, Link: pcieLink(d)}
		t.Boxes = append(t.Boxes, b)
		e := endpoint{id: b.ID, name: name, parents: d.Parents, numa: d.NUMANode, rdma: len(d.RDMADevs) > 0}
		nics = append(nics, e)
		for _, alias := range append(append([]string{name}, d.RDMADevs...), d.NetDevs...) {
			byName[alias] = e
		}
	}

	// Storage: where the data loader reads and checkpoints are written.
	for i, d := range n.NVMeControllers() {
		parent := addBridges(d)
		t.Boxes = append(t.Boxes, Box{ID: fmt.Sprintf("nvme%d", i), Kind: KindNVMe, Label: "NVMe " + shortAddr(d.Address), Address: d.Address,
			Detail: []string{pciName(d.Vendor, d.Device), d.Address}, Parent: parent, Link: pcieLink(d)})
	}

	// NVLink: the facts see NVSwitches on the PCI bus but not NVLink
	// itself, so a board without NVSwitch takes its fabric from the
	// hardware the spec declares.
	if sw := n.NVSwitches(); len(sw) > 0 {
		f := &Fabric{Label: fmt.Sprintf("NVLink · %d× NVSwitch", len(sw)), AllToAll: true}
		var addrs []string
		for _, d := range sw {
			addrs = append(addrs, shortAddr(d.Address))
		}
		f.Detail = []string{strings.Join(addrs, " ")}
		for _, g := range gpus {
			f.Members = append(f.Members, g.id)
		}
		t.Fabric = f
	} else if hw != nil {
		t.Fabric = hardwareFabric(hw, gpus)
	}

	t.Matrix = matrix(t.Fabric, gpus, nics, factsLevel)

	// Problems: links first, as the tree shows them.
	for _, b := range t.Boxes {
		if b.Link == nil || !b.Link.Degraded() {
			continue
		}
		hint := ""
		if b.Kind == KindGPU {
			narrow := b.Link.MaxWidth > 0 && b.Link.Width < b.Link.MaxWidth
			if !narrow {
				// A GPU lowers its link generation, never its width, when
				// it idles to save power (NVIDIA's nvidia-smi
				// documentation on "PCIe Generation"); sysfs cannot tell
				// that from a slot that trains low, so the picture does
				// not call it a fault: verify judges the generation on
				// NVML's negotiated maximum and the GPU-idle reason, and
				// bench measures the link under load.
				continue
			}
			// Idle power saving lowers the generation, not the width: a
			// link narrower than its maximum is the seating, the riser
			// or the slot.
			hint = "; a narrower link is not idle power saving (that lowers the generation only): reseat the GPU or check the riser and slot"
		}
		t.problem(ProblemLink, b.ID, "%s (%s): PCIe link trained at %s, below its maximum %s%s", b.Label, b.Address, genWidth(b.Link.Gen, b.Link.Width), genWidth(b.Link.MaxGen, b.Link.MaxWidth), hint)
	}

	missing := map[string]bool{}
	if hw != nil {
		have := map[string]bool{}
		for _, d := range n.NVIDIAGPUs() {
			if a, err := nvmlfacts.NormalizeBusID(d.Address); err == nil {
				have[a] = true
			}
		}
		described := 0
		for _, g := range hw.GPUs {
			if g.PCI == "" {
				continue
			}
			described++
			if a, err := nvmlfacts.NormalizeBusID(g.PCI); err == nil && !have[a] {
				id := "missing:gpu:" + a
				t.Boxes = append(t.Boxes, Box{ID: id, Kind: KindGPU, Label: fmt.Sprintf("GPU%d", g.Index), Detail: []string{hw.GPUModel, a, "not found"}, Parent: numaParent(g.NUMA), Missing: true})
				t.problem(ProblemMissing, id, "GPU%d at %s is declared in hardware but not on the PCI bus (reseat it or check the riser; a GPU that fell off the bus needs a power cycle)", g.Index, a)
			}
		}
		if described == 0 && hw.GPUCount > len(gpus) {
			id := "missing:gpus"
			t.Boxes = append(t.Boxes, Box{ID: id, Kind: KindGPU, Label: fmt.Sprintf("%d GPUs", hw.GPUCount-len(gpus)), Detail: []string{hw.GPUModel, "not found"}, Parent: numaParent(0), Missing: true})
			t.problem(ProblemMissing, id, "hardware declares %d GPUs, the PCI bus has %d", hw.GPUCount, len(gpus))
		}
		for _, nic := range hw.NICs {
			if _, ok := byName[nic.Name]; ok {
				continue
			}
			if _, ok := byName[nic.Netdev]; ok && nic.Netdev != "" {
				continue
			}
			id := nicID(nic.Name)
			missing[nic.Name] = true
			t.Boxes = append(t.Boxes, Box{ID: id, Kind: KindNIC, Label: nic.Name, Detail: []string{nic.PCI, "not found"}, Parent: numaParent(nic.NUMA), Missing: true})
			t.problem(ProblemMissing, id, "NIC %s is declared in hardware but absent (no RDMA device or netdev of that name)", nic.Name)
		}
	}

	// Compute rails' ports, judged as verify's nic.link judges them: the
	// spec says which devices are rails, so a picture drawn without one
	// shows port states and rates but judges none.
	if decl != nil {
		for _, rail := range niclink.Rails(decl, niclink.HostDevices(n)) {
			d, ok := n.RDMADevice(rail.Device)
			e, drawn := byName[rail.Device]
			if !ok || !drawn {
				continue // absent: the missing-device problems above say so
			}
			want := niclink.WantOf(hw, rail.Device)
			for _, pn := range rail.Ports {
				for _, p := range d.Ports {
					if p.Port != pn {
						continue
					}
					for _, fault := range niclink.Judge(rail.Device, niclink.FromFacts(p), want) {
						t.problem(ProblemNICLink, e.id, "%s port %d (%s): %s", rail.Device, pn, d.Address, fault)
					}
				}
			}
		}
	}

	// GPU–NIC pairs: the spec's affinity when it has one, else each GPU's
	// nearest RDMA NIC.
	if decl != nil && decl.Affinity != nil && len(decl.Affinity.GPUNIC) > 0 {
		for _, idx := range slices.Sorted(maps.Keys(decl.Affinity.GPUNIC)) {
			name := decl.Affinity.GPUNIC[idx].V
			if idx < 0 || idx >= len(gpus) {
				continue
			}
			g := gpus[idx]
			e, ok := byName[name]
			if !ok {
				if !missing[name] {
					missing[name] = true
					t.problem(ProblemMissing, g.id, "affinity pairs GPU%d with NIC %s, which the node does not have", idx, name)
				}
				continue
			}
			t.pair(g, e, factsLevel(g, e), true)
		}
	} else {
		for _, g := range gpus {
			var best *endpoint
			var bestLevel nvmlfacts.Level
			for k := range nics {
				e := &nics[k]
				if !e.rdma {
					continue
				}
				l := factsLevel(g, *e)
				if best == nil || l.Rank() < bestLevel.Rank() {
					best, bestLevel = e, l
				}
			}
			if best != nil {
				t.pair(g, *best, bestLevel, false)
			}
		}
	}

	// NUMA binds against where the GPUs are.
	if decl != nil && decl.NUMA != nil {
		for _, bind := range decl.NUMA.Binds {
			for _, gi := range bind.GPUs {
				if gi.V < 0 || gi.V >= len(gpus) {
					continue
				}
				g := gpus[gi.V]
				if g.numa >= 0 && g.numa != bind.Node.V {
					t.problem(ProblemNUMABind, g.id, "numa bind puts GPU%d on NUMA node %d, but the GPU is attached to node %d (%s)", gi.V, bind.Node.V, g.numa, bind.DeclRange)
				}
			}
		}
	}
	t.sortProblems()
	return t
}

// pair records a GPU–NIC pair and the problem when it crosses sockets.
func (t *Topology) pair(g, e endpoint, l nvmlfacts.Level, declared bool) {
	t.Pairs = append(t.Pairs, Pair{GPU: g.id, NIC: e.id, Level: l, Declared: declared})
	if l != nvmlfacts.LevelSys {
		return
	}
	if declared {
		t.problem(ProblemCrossSocket, g.id, "%s is paired with %s across sockets (SYS): GPUDirect RDMA traffic crosses the CPU interconnect; pair it with a NIC on NUMA node %d", g.name, e.name, g.numa)
	} else {
		t.problem(ProblemCrossSocket, g.id, "%s has no RDMA NIC on its socket: its nearest, %s, is across the CPU interconnect (SYS)", g.name, e.name)
	}
}

// factsLevel is where two devices meet, judged on their PCIe chains the
// way provision/verify/nvmlfacts.SysfsTopology judges sysfs paths: devices
// under different host bridges meet at NODE or SYS by NUMA node; under one
// host bridge but no common bridge at PHB; each one port below a common
// switch at PIX; otherwise PXB.
func factsLevel(a, b endpoint) nvmlfacts.Level {
	if len(a.parents) == 0 || len(b.parents) == 0 || hostBridge(a.parents[0]) != hostBridge(b.parents[0]) {
		if a.numa < 0 || b.numa < 0 || a.numa != b.numa {
			// Unknown locality reads as the farthest, as verify does.
			return nvmlfacts.LevelSys
		}
		return nvmlfacts.LevelNode
	}
	common := 0
	for common < len(a.parents) && common < len(b.parents) && a.parents[common] == b.parents[common] {
		common++
	}
	switch {
	case common == 0:
		return nvmlfacts.LevelPHB
	case len(a.parents)-common <= 1 && len(b.parents)-common <= 1:
		return nvmlfacts.LevelPIX
	default:
		return nvmlfacts.LevelPXB
	}
}

// hostBridge is the root bus a root port sits on ("0000:15" for
// "0000:15:01.0"): ports on one bus share a host bridge.
func hostBridge(rootPort string) string {
	if i := strings.LastIndexByte(rootPort, ':'); i > 0 {
		return rootPort[:i]
	}
	return rootPort
}

// matrix builds the topo -m table over GPUs then NICs.
func matrix(f *Fabric, gpus, nics []endpoint, level func(a, b endpoint) nvmlfacts.Level) Matrix {
	var m Matrix
	all := append(append([]endpoint{}, gpus...), nics...)
	for i, e := range all {
		name := e.name
		if i >= len(gpus) {
			name = fmt.Sprintf("NIC%d", i-len(gpus))
			m.Legend = append(m.Legend, name+": "+e.name)
		}
		m.Names = append(m.Names, name)
		m.Boxes = append(m.Boxes, e.id)
		m.NUMA = append(m.NUMA, e.numa)
	}
	nv := map[string]bool{}
	if f != nil && f.AllToAll {
		for _, id := range f.Members {
			nv[id] = true
		}
	}
	for i, a := range all {
		row := make([]string, len(all))
		for j, b := range all {
			switch {
			case i == j:
				row[j] = "X"
			case nv[a.id] && nv[b.id]:
				row[j] = "NV"
			default:
				row[j] = string(level(a, b))
			}
		}
		m.Cells = append(m.Cells, row)
	}
	return m
}

func pcieLink(d facts.PCIDevice) *Link {
	if d.CurrentLinkSpeed == "" && d.CurrentLinkWidth == 0 {
		return nil
	}
	l := &Link{Gen: facts.LinkGen(d.CurrentLinkSpeed), Width: d.CurrentLinkWidth, MaxGen: facts.LinkGen(d.MaxLinkSpeed), MaxWidth: d.MaxLinkWidth}
	// A link trains to the lower of the device's and its slot's maximum
	// (read for RDMA NICs): a Gen5 NIC in a Gen4 slot is at its maximum,
	// as verify's nic.pcie_link judges it.
	if g := facts.LinkGen(d.PortMaxLinkSpeed); g > 0 && g < l.MaxGen {
		l.MaxGen = g
	}
	if w := d.PortMaxLinkWidth; w > 0 && w < l.MaxWidth {
		l.MaxWidth = w
	}
	return l
}

// fastestPorts is the highest rate, in Gb/s, of the node's active RDMA
// ports of each link layer: what a port of that layer should run at,
// as bench expects it.
func fastestPorts(n *facts.Node) map[string]float64 {
	out := map[string]float64{}
	for _, d := range n.RDMA {
		for _, p := range d.Ports {
			l := niclink.FromFacts(p)
			if l.State == "ACTIVE" && l.RateGbps > out[l.LinkLayer] {
				out[l.LinkLayer] = l.RateGbps
			}
		}
	}
	return out
}

// portNoted reports a port the picture draws in red: not active, or
// slower than the node's fastest active port of its link layer.
func portNoted(p facts.RDMAPort, fastest map[string]float64) bool {
	l := niclink.FromFacts(p)
	if l.State != "" && l.State != "ACTIVE" {
		return true
	}
	return l.RateGbps > 0 && l.RateGbps < fastest[l.LinkLayer]
}

func portText(p facts.RDMAPort) string {
	s := p.Rate
	if s == "" {
		s = "rate unknown"
	}
	s += " " + p.LinkLayer
	if st := p.State; st != "" && !strings.HasSuffix(st, "ACTIVE") {
		s += " · " + st
	}
	if p.Port > 1 {
		s = fmt.Sprintf("port %d: %s", p.Port, s)
	}
	return strings.TrimSpace(s)
}

func cpuTitle(model string, sockets int) string {
	if model == "" {
		model = "CPU"
	}
	if sockets > 1 {
		return fmt.Sprintf("%d× %s", sockets, model)
	}
	return model
}

func sizeText(b uint64) string {
	const gib = 1 << 30
	if b >= gib {
		return fmt.Sprintf("%d GiB", (b+gib/2)/gib)
	}
	return fmt.Sprintf("%d MiB", (b+(1<<19))>>20)
}

// shortAddr drops PCI domain 0000, as lspci does.
func shortAddr(a string) string {
	return strings.TrimPrefix(a, "0000:")
}

func socketID(s int) string { return fmt.Sprintf("socket:%d", s) }
func numaID(n int) string   { return fmt.Sprintf("numa:%d", n) }
func gpuID(i int) string    { return fmt.Sprintf("gpu:%d", i) }
func nicID(n string) string { return "nic:" + n }
