package lint

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/spec"
)

// at returns the range of a written attribute, or fallback when the
// attribute was omitted (then the finding points at the enclosing block).
func at[T any](a spec.Attr[T], fallback hcl.Range) hcl.Range {
	if a.Set && a.Range.Filename != "" {
		return a.Range
	}
	return fallback
}

// nodeRef names a node in messages.
func nodeRef(n *spec.Node) string { return fmt.Sprintf("node %q", n.Name) }

// gpuCount is the number of GPUs the hardware declares.
func gpuCount(h *spec.Hardware) int {
	if h == nil {
		return 0
	}
	if h.GPUCount > 0 {
		return h.GPUCount
	}
	return len(h.GPUs)
}

// multiSocket reports whether the hardware has more than one NUMA node or
// CPU socket, which is when NUMA placement matters.
func multiSocket(h *spec.Hardware) bool {
	if h == nil {
		return false
	}
	if h.CPUSockets > 1 || h.NUMANodes > 1 {
		return true
	}
	seen := map[int]bool{}
	for _, g := range h.GPUs {
		seen[g.NUMA] = true
	}
	return len(seen) > 1
}

// numaNodes returns the NUMA node ids the hardware has: 0..NUMANodes-1 when
// the count is declared, else the nodes its GPUs and NICs sit on.
func numaNodes(h *spec.Hardware) map[int]bool {
	out := map[int]bool{}
	if h.NUMANodes > 0 {
		for i := 0; i < h.NUMANodes; i++ {
			out[i] = true
		}
		return out
	}
	for _, g := range h.GPUs {
		out[g.NUMA] = true
	}
	for _, n := range h.NICs {
		out[n.NUMA] = true
	}
	return out
}

// rdmaNICs returns the RDMA-capable NICs of the hardware.
func rdmaNICs(h *spec.Hardware) []spec.HardwareNIC {
	if h == nil {
		return nil
	}
	var out []spec.HardwareNIC
	for _, n := range h.NICs {
		if n.RDMA {
			out = append(out, n)
		}
	}
	return out
}

// gpuDirectIntended reports whether a node is set up for GPUDirect RDMA:
// it pairs GPUs with RDMA NICs, or loads nvidia-peermem.
func gpuDirectIntended(n *spec.Node) bool {
	if n.Driver != nil && n.Driver.Peermem.Set && n.Driver.Peermem.V {
		return true
	}
	if n.Hardware == nil || n.Affinity == nil {
		return false
	}
	for _, nic := range n.Affinity.GPUNIC {
		if hw, ok := n.Hardware.NIC(nic.V); ok && hw.RDMA {
			return true
		}
	}
	return false
}

// nicNames lists the hardware's NIC names for "did you mean" details.
func nicNames(h *spec.Hardware) string {
	var names []string
	for _, n := range h.NICs {
		names = append(names, n.Name)
	}
	if len(names) == 0 {
		return "the hardware declares no NICs"
	}
	return "the hardware declares " + strings.Join(names, ", ")
}

// humanBytes renders a byte count for messages, in the largest binary
// unit that divides it exactly.
func humanBytes(b uint64) string { return spec.FormatBytes(b) }

func hwName(h *spec.Hardware) string {
	if h.Name != "" {
		return h.Name
	}
	return "the hardware"
}

func hostList(hosts []string) string {
	if len(hosts) == 1 {
		return fmt.Sprintf("Host %s is", hosts[0])
	}
	if len(hosts) <= 3 {
		return fmt.Sprintf("Hosts %v are", hosts)
	}
	return fmt.Sprintf("%d hosts (%s, %s, … %s) are", len(hosts), hosts[0], hosts[1], hosts[len(hosts)-1])
}

// sortedGPUNIC returns the gpu_nic entries in GPU order, for stable output.
func sortedGPUNIC(a *spec.Affinity) []int {
	keys := make([]int, 0, len(a.GPUNIC))
	for k := range a.GPUNIC {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

func gpuIndexes(h *spec.Hardware) string {
	var s []string
	for _, g := range h.GPUs {
		s = append(s, fmt.Sprint(g.Index))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
