package graph

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/spec"
)

// FromSpec draws a node block as its hardware value describes it, with no
// host reached: sockets, NUMA nodes, the declared PCIe switches, GPUs,
// NVLink and NICs, and the numa binds and affinity pairs checked against
// that hardware. It fails when the node has no hardware value.
func FromSpec(decl *spec.Node) (*Topology, error) {
	hw := decl.Hardware
	if hw == nil {
		return nil, fmt.Errorf("node %q has no hardware value to draw: set hardware (e.g. hardware = module.hgx.hardware) or draw the hosts as they are without -offline", decl.Name)
	}
	t := &Topology{Source: SourceSpec, Title: hw.Name}
	if t.Title == "" {
		t.Title = fmt.Sprintf("%d× %s", hw.GPUCount, hw.GPUModel)
	}
	sockets := max(hw.CPUSockets, 1)
	for s := range sockets {
		t.Boxes = append(t.Boxes, Box{ID: socketID(s), Kind: KindSocket, Label: fmt.Sprintf("CPU socket %d", s)})
	}
	nodes := max(hw.NUMANodes, 1)
	for i := range nodes {
		t.Boxes = append(t.Boxes, Box{ID: numaID(i), Kind: KindNUMA, Label: fmt.Sprintf("NUMA %d", i), Parent: socketID(socketOf(i, nodes, sockets))})
	}
	// A switch is drawn under the NUMA node of the first device that names
	// it; the hardware value says no more about where it sits.
	switches := map[string]bool{}
	parentOf := func(sw string, numa int) string {
		if sw == "" {
			return numaID(numa)
		}
		id := "switch:" + sw
		if !switches[sw] {
			switches[sw] = true
			t.Boxes = append(t.Boxes, Box{ID: id, Kind: KindSwitch, Label: "PCIe switch", Detail: []string{sw}, Parent: numaID(numa)})
		}
		return id
	}
	var gpus, nics []endpoint
	byName := map[string]endpoint{}
	gpuByIndex := map[int]endpoint{}
	for _, g := range hw.GPUs {
		b := Box{ID: gpuID(g.Index), Kind: KindGPU, Label: fmt.Sprintf("GPU%d", g.Index), Address: g.PCI, Detail: []string{hw.GPUModel}, Parent: parentOf(g.Switch, g.NUMA)}
		if g.PCI != "" {
			b.Detail = append(b.Detail, g.PCI)
		}
		t.Boxes = append(t.Boxes, b)
		e := endpoint{id: b.ID, name: b.Label, numa: g.NUMA}
		if g.Switch != "" {
			e.parents = []string{g.Switch}
		}
		gpus = append(gpus, e)
		gpuByIndex[g.Index] = e
	}
	if len(hw.GPUs) == 0 {
		// Only a count: the GPUs' placement is not declared.
		for i := range hw.GPUCount {
			b := Box{ID: gpuID(i), Kind: KindGPU, Label: fmt.Sprintf("GPU%d", i), Detail: []string{hw.GPUModel, "placement not declared"}, Parent: numaID(0)}
			t.Boxes = append(t.Boxes, b)
			e := endpoint{id: b.ID, name: b.Label, numa: -1}
			gpus = append(gpus, e)
			gpuByIndex[i] = e
		}
	}
	for _, n := range hw.NICs {
		b := Box{ID: nicID(n.Name), Kind: KindNIC, Label: n.Name, Address: n.PCI, Parent: parentOf(n.Switch, n.NUMA)}
		if n.Netdev != "" {
			b.Detail = append(b.Detail, n.Netdev)
		}
		if n.PCI != "" {
			b.Detail = append(b.Detail, n.PCI)
		}
		rate := ""
		if n.SpeedGbps > 0 {
			rate = fmt.Sprintf("%d Gb/s ", n.SpeedGbps)
		}
		if rate+n.Link != "" {
			b.Detail = append(b.Detail, rate+n.Link)
		}
		t.Boxes = append(t.Boxes, b)
		e := endpoint{id: b.ID, name: n.Name, numa: n.NUMA, rdma: n.RDMA}
		if n.Switch != "" {
			e.parents = []string{n.Switch}
		}
		nics = append(nics, e)
		byName[n.Name] = e
		if n.Netdev != "" {
			byName[n.Netdev] = e
		}
	}
	t.Fabric = hardwareFabric(hw, gpus)
	t.Matrix = matrix(t.Fabric, gpus, nics, specLevel)

	if decl.Affinity != nil {
		for _, idx := range slices.Sorted(maps.Keys(decl.Affinity.GPUNIC)) {
			g, ok := gpuByIndex[idx]
			name := decl.Affinity.GPUNIC[idx].V
			e, ok2 := byName[name]
			switch {
			case !ok:
				continue
			case !ok2:
				t.problem(ProblemMissing, g.id, "affinity pairs GPU%d with NIC %s, which the hardware does not declare", idx, name)
			default:
				t.pair(g, e, specLevel(g, e), true)
			}
		}
	}
	if decl.NUMA != nil {
		for _, bind := range decl.NUMA.Binds {
			for _, gi := range bind.GPUs {
				g, ok := gpuByIndex[gi.V]
				if ok && g.numa >= 0 && g.numa != bind.Node.V {
					t.problem(ProblemNUMABind, g.id, "numa bind puts GPU%d on NUMA node %d, but the hardware attaches it to node %d (%s)", gi.V, bind.Node.V, g.numa, bind.DeclRange)
				}
			}
		}
	}
	t.sortProblems()
	return t, nil
}

// specLevel is where two declared devices meet. The hardware value names
// a device's switch but not the bridges inside it, so a shared switch
// reads as PXB, the farther of the two switch levels and what the HGX
// boards' nvidia-smi topo -m shows for a GPU and its NIC; different
// switches on one NUMA node read as NODE (the value cannot tell one host
// bridge from two), different NUMA nodes as SYS.
func specLevel(a, b endpoint) nvmlfacts.Level {
	switch {
	case len(a.parents) > 0 && len(b.parents) > 0 && a.parents[0] == b.parents[0]:
		return nvmlfacts.LevelPXB
	case a.numa >= 0 && a.numa == b.numa:
		return nvmlfacts.LevelNode
	default:
		return nvmlfacts.LevelSys
	}
}

// hardwareFabric is the NVLink domain a hardware value declares.
func hardwareFabric(hw *spec.Hardware, gpus []endpoint) *Fabric {
	var f *Fabric
	switch hw.Interconnect {
	case "nvswitch":
		f = &Fabric{Label: "NVLink · NVSwitch", AllToAll: true}
	case "nvlink_bridge":
		// Which GPUs a bridge joins is not in the hardware value.
		f = &Fabric{Label: "NVLink bridges", Detail: []string{fmt.Sprintf("domains of %d GPUs", hw.NVLinkDomain)}}
	case "nvlink_c2c":
		f = &Fabric{Label: "NVLink-C2C", Detail: []string{"GPU ↔ Grace CPU"}}
	default:
		return nil
	}
	for _, g := range gpus {
		f.Members = append(f.Members, g.id)
	}
	return f
}
