// Package bind computes a node's GPU binding from its spec (each GPU's NUMA
// node, that node's CPUs and the GPU's paired NIC), records it as JSON for
// the node, and launches a job bound to one GPU's share of it: the
// `gpuform bind` launcher.
package bind

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/internal/spelling"

	"github.com/gpuform/gpuform/internal/cpulist"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// File is where apply records a node's binding and where the launcher
// reads it by default. /etc/gpuform is read whole by the facts probe, so
// plan diffs it like every managed file.
const File = "/etc/gpuform/binding.json"

// FormatVersion is the version of the binding file's JSON; a reader
// refuses a file of another version rather than guess.
const FormatVersion = 1

// Unbound is the NUMA node of a GPU no numa.bind block names.
const Unbound = -1

// Binding is a node's GPU binding.
type Binding struct {
	// FormatVersion is FormatVersion.
	FormatVersion int `json:"format_version"`
	// ManagedBy says, in the place of the comment header gpuform puts on
	// the files it writes (JSON has no comments), which spec wrote it.
	ManagedBy string `json:"managed_by,omitempty"`
	// Node is the spec's node block name.
	Node string `json:"node"`
	// GPUs are sorted by index; a local rank r runs on GPUs[r].
	GPUs []GPU `json:"gpus"`
}

// GPU is one GPU's binding.
type GPU struct {
	// Index is the NVML index.
	Index int `json:"index"`
	// PCI is the PCI bus id from the hardware description; "" if unknown.
	PCI string `json:"pci,omitempty"`
	// NUMA is the NUMA node the spec binds it to; Unbound when none.
	NUMA int `json:"numa_node"`
	// CPUs is that NUMA node's cpulist as the node reports it
	// (/sys/devices/system/node/nodeN/cpulist); "" when unbound.
	CPUs string `json:"cpus,omitempty"`
	// NIC is the paired NIC (affinity.gpu_nic): an RDMA device name, or a
	// netdev for plain Ethernet; "" when none.
	NIC string `json:"nic,omitempty"`
	// Netdev is the NIC's network interface, from the hardware description.
	Netdev string `json:"netdev,omitempty"`
	// RDMA is true when NIC is an RDMA device (NCCL_IB_HCA applies).
	RDMA bool `json:"rdma,omitempty"`
}

// CPULists returns the cpulist of a NUMA node as the node reports it;
// ok is false when the node has no such NUMA node.
type CPULists func(numa int) (cpus string, ok bool)

// Wanted reports whether node n asks for a binding: numa.bind blocks or an
// affinity.gpu_nic pairing.
func Wanted(n *spec.Node) bool {
	return n.NUMA != nil && len(n.NUMA.Binds) > 0 || n.Affinity != nil && len(n.Affinity.GPUNIC) > 0
}

// Compute derives node n's binding, reading the CPUs of each bound NUMA
// node through cpus. The GPUs are those the binds, the NIC pairing and the
// hardware description name. It returns nil when n asks for no binding.
func Compute(n *spec.Node, cpus CPULists) (*Binding, error) {
	if !Wanted(n) {
		return nil, nil
	}
	gpus := map[int]*GPU{}
	get := func(i int) *GPU {
		if g, ok := gpus[i]; ok {
			return g
		}
		g := &GPU{Index: i, NUMA: Unbound}
		gpus[i] = g
		return g
	}
	if n.Hardware != nil {
		for _, hg := range n.Hardware.GPUs {
			get(hg.Index).PCI = hg.PCI
		}
	}
	if n.NUMA != nil {
		for _, b := range n.NUMA.Binds {
			for _, gi := range b.GPUs {
				g := get(gi.V)
				if g.NUMA != Unbound && g.NUMA != b.Node.V {
					return nil, fmt.Errorf("GPU %d is bound to NUMA nodes %d and %d", gi.V, g.NUMA, b.Node.V)
				}
				g.NUMA = b.Node.V
			}
		}
	}
	if n.Affinity != nil {
		for gi, nic := range n.Affinity.GPUNIC {
			g := get(gi)
			g.NIC = nic.V
			// gpu_nic names RDMA devices; the hardware description says
			// otherwise for a plain Ethernet port.
			g.RDMA = true
			if n.Hardware != nil {
				if hn, ok := n.Hardware.NIC(nic.V); ok {
					g.Netdev = hn.Netdev
					g.RDMA = hn.RDMA || hn.Link == "infiniband" || hn.Link == "roce"
					if hn.Name != nic.V && hn.Netdev == nic.V {
						// Paired by netdev: the RDMA device is the name.
						g.NIC = hn.Name
					}
				}
			}
		}
	}
	b := &Binding{FormatVersion: FormatVersion, Node: n.Name}
	for _, i := range slices.Sorted(maps.Keys(gpus)) {
		g := gpus[i]
		if g.NUMA != Unbound {
			c, ok := cpus(g.NUMA)
			if !ok {
				return nil, fmt.Errorf("GPU %d is bound to NUMA node %d, which this host does not have", g.Index, g.NUMA)
			}
			if _, err := cpulist.Parse(c); err != nil {
				return nil, fmt.Errorf("NUMA node %d: cpulist %q: %w", g.NUMA, c, err)
			}
			g.CPUs = c
		}
		b.GPUs = append(b.GPUs, *g)
	}
	return b, nil
}

// Marshal renders b as the binding file: indented JSON, one trailing
// newline, the same bytes for the same binding.
func (b *Binding) Marshal() string {
	out, _ := json.MarshalIndent(b, "", "  ")
	return string(out) + "\n"
}

// Parse reads a binding file.
func Parse(data []byte) (*Binding, error) {
	var b Binding
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("not a gpuform binding file: %w", err)
	}
	if b.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("binding format_version %d is not %d, the one this gpuform reads; apply the spec with this gpuform again", b.FormatVersion, FormatVersion)
	}
	if !slices.IsSortedFunc(b.GPUs, func(x, y GPU) int { return x.Index - y.Index }) {
		return nil, fmt.Errorf("binding lists its GPUs out of index order")
	}
	for _, g := range b.GPUs {
		if g.NUMA != Unbound {
			if _, err := cpulist.Parse(g.CPUs); err != nil {
				return nil, fmt.Errorf("GPU %d: cpus %q: %w", g.Index, g.CPUs, err)
			}
		}
	}
	return &b, nil
}

// Env returns the variables that point a job on g at its NIC: NCCL_IB_HCA
// (with "=", NCCL's exact match, so mlx5_1 does not also select mlx5_10)
// and UCX_NET_DEVICES (device:port for RDMA, the netdev otherwise). None
// when g has no NIC.
func (g GPU) Env() []string {
	switch {
	case g.NIC == "":
		return nil
	case g.RDMA:
		return []string{"NCCL_IB_HCA==" + g.NIC, "UCX_NET_DEVICES=" + g.NIC + ":1"}
	case g.Netdev != "":
		return []string{"UCX_NET_DEVICES=" + g.Netdev}
	default:
		return []string{"UCX_NET_DEVICES=" + g.NIC}
	}
}

// String is g in one line, for -v and errors.
func (g GPU) String() string {
	s := fmt.Sprintf("GPU %d", g.Index)
	if g.PCI != "" {
		s += " (" + spelling.BusID(g.PCI) + ")"
	}
	var parts []string
	if g.NUMA == Unbound {
		parts = append(parts, "no NUMA node bound")
	} else {
		parts = append(parts, fmt.Sprintf("NUMA node %d (CPUs %s)", g.NUMA, g.CPUs))
	}
	if g.NIC != "" {
		nic := "NIC " + g.NIC
		if g.Netdev != "" {
			nic += " (" + g.Netdev + ")"
		}
		parts = append(parts, nic)
	}
	return s + ": " + strings.Join(parts, ", ")
}

// FactsCPULists reads each NUMA node's cpulist from a host's facts: what
// apply records for the node.
func FactsCPULists(f *facts.Node) CPULists {
	return func(numa int) (string, bool) {
		for _, n := range f.NUMA {
			if n.ID == numa {
				return n.CPUs, true
			}
		}
		return "", false
	}
}
