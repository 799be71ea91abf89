package bench

import (
	"sort"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// GPU is one GPU of a host as bench needs it: numbered in PCI address
// order, which is NVML's and (with CUDA_DEVICE_ORDER=PCI_BUS_ID, which
// bench sets) CUDA's order.
type GPU struct {
	// Index is the GPU's position in PCI address order.
	Index int
	// Address is the PCI address.
	Address string
	// NUMA is the NUMA node sysfs gives; -1 when it does not say.
	NUMA int
	// Model is the knowledge base's model, "" when the PCI ID is unknown.
	Model string
	// DeviceID is the PCI device ID ("0x2330"): what makes GPUs of a
	// model the knowledge base does not know peers.
	DeviceID string
	// Gen and MaxGen are the current and maximum PCIe generation; Width
	// and MaxWidth the lane counts (0 when unknown).
	Gen, MaxGen, Width, MaxWidth int
}

// NIC is one RDMA port of a host.
type NIC struct {
	// Name is the RDMA device ("mlx5_0").
	Name string
	// Port is the port number.
	Port int
	// RateGbps is the rate sysfs gives, in Gb/s; 0 when unknown.
	RateGbps float64
	// RateText is sysfs' rate as written ("400 Gb/sec (4X NDR)").
	RateText string
	// NUMA is the NUMA node of the NIC's PCI function; -1 when unknown.
	NUMA int
	// LinkLayer is "InfiniBand" or "Ethernet".
	LinkLayer string
}

// HostInfo is what bench knows of a host before it measures: its GPUs,
// NICs and NUMA nodes from the facts probe, and the spec's binding.
type HostInfo struct {
	// Name is the inventory name.
	Name string
	// GPUs are in PCI address order.
	GPUs []GPU
	// NICs are the active RDMA ports, by name.
	NICs []NIC
	// NUMA maps a NUMA node to its cpulist.
	NUMA map[int]string
	// SpecBind maps a GPU index to the NUMA node the spec's numa { bind }
	// gives it.
	SpecBind map[int]int
	// Pairing maps a GPU index to the NIC the spec's affinity pairs it
	// with.
	Pairing map[int]string
	// Nodes is the number of hosts of the host's node block.
	Nodes int
}

var rateRE = lazyre.New(`^\s*([0-9.]+)\s*Gb/sec`)

// ParseRate reads sysfs' RDMA port rate ("400 Gb/sec (4X NDR)") in Gb/s.
func ParseRate(s string) (float64, bool) {
	m := rateRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil && v > 0
}

// NewHostInfo builds a HostInfo from a host's facts and its node block
// (nil for none).
func NewHostInfo(kb *kb.KB, name string, f *facts.Node, n *spec.Node) HostInfo {
	h := HostInfo{Name: name, NUMA: map[int]string{}, SpecBind: map[int]int{}, Pairing: map[int]string{}, Nodes: 1}
	numaOf := map[string]int{}
	for _, d := range f.PCI {
		numaOf[d.Address] = d.NUMANode
	}
	for i, d := range f.NVIDIAGPUs() {
		g := GPU{Index: i, Address: d.Address, NUMA: d.NUMANode, DeviceID: d.Device,
			Gen: facts.LinkGen(d.CurrentLinkSpeed), MaxGen: facts.LinkGen(d.MaxLinkSpeed),
			Width: d.CurrentLinkWidth, MaxWidth: d.MaxLinkWidth}
		if dev, ok := kb.GPUByPCIID(d.Device); ok {
			g.Model = dev.Model.Name
		}
		h.GPUs = append(h.GPUs, g)
	}
	for _, r := range f.RDMA {
		for _, p := range r.Ports {
			if !strings.Contains(p.State, "ACTIVE") {
				continue
			}
			nic := NIC{Name: r.Name, Port: p.Port, RateText: p.Rate, NUMA: -1, LinkLayer: p.LinkLayer}
			nic.RateGbps, _ = ParseRate(p.Rate)
			if v, ok := numaOf[r.Address]; ok {
				nic.NUMA = v
			}
			h.NICs = append(h.NICs, nic)
		}
	}
	sort.Slice(h.NICs, func(i, j int) bool {
		if h.NICs[i].Name != h.NICs[j].Name {
			return h.NICs[i].Name < h.NICs[j].Name
		}
		return h.NICs[i].Port < h.NICs[j].Port
	})
	for _, nn := range f.NUMA {
		h.NUMA[nn.ID] = nn.CPUs
	}
	if n != nil {
		if len(n.Hosts) > 0 {
			h.Nodes = len(n.Hosts)
		}
		if n.NUMA != nil {
			for _, b := range n.NUMA.Binds {
				for _, g := range b.GPUs {
					h.SpecBind[g.V] = b.Node.V
				}
			}
		}
		if n.Affinity != nil {
			for g, nic := range n.Affinity.GPUNIC {
				h.Pairing[g] = nic.V
			}
		}
	}
	return h
}

// Model is the GPUs' model when they all share one, else "".
func (h HostInfo) Model() string {
	if len(h.GPUs) == 0 {
		return ""
	}
	m := h.GPUs[0].Model
	for _, g := range h.GPUs[1:] {
		if g.Model != m {
			return ""
		}
	}
	return m
}

// NUMAIDs are the host's NUMA nodes, sorted.
func (h HostInfo) NUMAIDs() []int {
	ids := make([]int, 0, len(h.NUMA))
	for id := range h.NUMA {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// PeerRate is the highest link rate among the host's NICs of n's link
// layer, n included: the rate n should have trained at.
func (h HostInfo) PeerRate(n NIC) float64 {
	best := n.RateGbps
	for _, o := range h.NICs {
		if o.LinkLayer == n.LinkLayer && o.RateGbps > best {
			best = o.RateGbps
		}
	}
	return best
}
