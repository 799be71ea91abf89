package lint

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/spec"
)

// gpuNICDistanceRule declares gpu_nic_distance.
func gpuNICDistanceRule() Rule {
	return Rule{
		Name:     "gpu_nic_distance",
		Severity: Error,
		Summary:  "gpu_nic pairs a GPU with a NIC on another NUMA node or PCIe switch while a closer NIC exists.",
		Check:    checkGPUNICDistance,
	}
}

// gpuNICSharedRule declares gpu_nic_shared.
func gpuNICSharedRule() Rule {
	return Rule{
		Name:     "gpu_nic_shared",
		Severity: Warning,
		Summary:  "Two GPUs share one NIC while another RDMA NIC is idle.",
		Check:    checkGPUNICShared,
	}
}

// nicDistance is how far a NIC is from a GPU: 0 behind the same PCIe switch,
// 1 on the same NUMA node, 2 across sockets (NCCL's PIX/PXB, NODE and SYS).
func nicDistance(g spec.HardwareGPU, nic spec.HardwareNIC) int {
	switch {
	case g.Switch != "" && g.Switch == nic.Switch:
		return 0
	case g.NUMA == nic.NUMA:
		return 1
	}
	return 2
}

var distanceWords = []string{"behind the same PCIe switch", "on the same NUMA node", "on another NUMA node"}

func checkGPUNICDistance(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.Affinity == nil || n.Hardware == nil {
			continue
		}
		for _, gi := range sortedGPUNIC(n.Affinity) {
			nicAttr := n.Affinity.GPUNIC[gi]
			g, okG := n.Hardware.GPU(gi)
			nic, okN := n.Hardware.NIC(nicAttr.V)
			if !okG || !okN {
				continue
			}
			d := nicDistance(g, nic)
			best, bestD := "", d
			for _, other := range n.Hardware.NICs {
				if other.RDMA != nic.RDMA {
					continue
				}
				if od := nicDistance(g, other); od < bestD {
					best, bestD = other.Name, od
				}
			}
			if best == "" {
				continue
			}
			ctx.Report(nicAttr.Range,
				fmt.Sprintf("%s: GPU %d is paired with %s, %s, while %s is %s", nodeRef(n), gi, nic.Name, distanceWords[d], best, distanceWords[bestD]),
				fmt.Sprintf("GPUDirect RDMA between a GPU and a NIC that do not share a PCIe switch goes through the CPU, and across sockets through the inter-socket link; NCCL then disables GDR or runs at a fraction of line rate (NCCL_NET_GDR_LEVEL: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html). Pair GPU %d with %s.", gi, best))
		}
	}
}

func checkGPUNICShared(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.Affinity == nil || n.Hardware == nil {
			continue
		}
		users := map[string][]int{}
		for _, gi := range sortedGPUNIC(n.Affinity) {
			users[n.Affinity.GPUNIC[gi].V] = append(users[n.Affinity.GPUNIC[gi].V], gi)
		}
		var idle []string
		for _, nic := range rdmaNICs(n.Hardware) {
			if len(users[nic.Name]) == 0 && (nic.Netdev == "" || len(users[nic.Netdev]) == 0) {
				idle = append(idle, nic.Name)
			}
		}
		if len(idle) == 0 {
			continue
		}
		for _, gi := range sortedGPUNIC(n.Affinity) {
			name := n.Affinity.GPUNIC[gi].V
			if len(users[name]) < 2 || users[name][0] == gi {
				continue
			}
			ctx.Report(n.Affinity.GPUNIC[gi].Range,
				fmt.Sprintf("%s: GPU %d shares %s with GPU %d while %s is idle", nodeRef(n), gi, name, users[name][0], strings.Join(idle, ", ")),
				"Two GPUs on one NIC halve each GPU's share of network bandwidth for collectives that span nodes, while a NIC the node paid for carries nothing. Pair each GPU with its own NIC, nearest first (rail-optimised).")
		}
	}
}
