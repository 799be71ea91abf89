package lint

import (
	"fmt"

	"github.com/gpuform/gpuform/spec"
)

// gpuNICCrossSocketRule declares gpu_nic_cross_socket.
func gpuNICCrossSocketRule() Rule {
	return Rule{
		Name:     "gpu_nic_cross_socket",
		Severity: Error,
		Summary:  "gpu_nic pairs a GPU with a NIC on the other CPU socket while its own socket has one.",
		Check:    checkGPUNICCrossSocket,
	}
}

// socketOf returns the CPU socket of a NUMA node: Linux numbers the NUMA
// nodes of a socket split by NPS or SNC together, socket by socket. ok is
// false when the hardware does not say how many sockets hold its nodes.
func socketOf(h *spec.Hardware, numa int) (int, bool) {
	if h.CPUSockets < 1 || h.NUMANodes < h.CPUSockets || h.NUMANodes%h.CPUSockets != 0 {
		return 0, false
	}
	return numa / (h.NUMANodes / h.CPUSockets), true
}

// checkGPUNICCrossSocket finds pairings across sockets where the GPU's own
// socket has a NIC of the same kind on another of its NUMA nodes (NPS2/4,
// SNC). Where one sits on the GPU's own NUMA node or PCIe switch,
// gpu_nic_distance reports the pairing instead.
func checkGPUNICCrossSocket(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.Affinity == nil || n.Hardware == nil {
			continue
		}
		h := n.Hardware
		for _, gi := range sortedGPUNIC(n.Affinity) {
			nicAttr := n.Affinity.GPUNIC[gi]
			g, okG := h.GPU(gi)
			nic, okN := h.NIC(nicAttr.V)
			if !okG || !okN {
				continue
			}
			gs, ok1 := socketOf(h, g.NUMA)
			ns, ok2 := socketOf(h, nic.NUMA)
			if !ok1 || !ok2 || gs == ns {
				continue
			}
			near, closer := "", false
			for _, other := range h.NICs {
				if other.RDMA != nic.RDMA {
					continue
				}
				if nicDistance(g, other) < 2 {
					closer = true
					break
				}
				if s, ok := socketOf(h, other.NUMA); ok && s == gs && near == "" {
					near = fmt.Sprintf("%s (NUMA %d)", other.Name, other.NUMA)
				}
			}
			if closer || near == "" {
				continue
			}
			ctx.Report(nicAttr.Range,
				fmt.Sprintf("%s: GPU %d (socket %d, NUMA %d) is paired with %s on socket %d, while %s is on socket %d", nodeRef(n), gi, gs, g.NUMA, nic.Name, ns, near, gs),
				fmt.Sprintf("Traffic between a GPU and a NIC on the other socket crosses the inter-socket link (NCCL's SYS path); NCCL then does not use GPUDirect RDMA by default and the rank's network bandwidth drops (NCCL_NET_GDR_LEVEL: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html). `gpuform bind` and nccl.conf follow gpu_nic, so every job would take that path. Pair GPU %d with a NIC on socket %d.", gi, gs))
		}
	}
}
