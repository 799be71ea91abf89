package lint

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/spec"
)

func topologyRules() []Rule {
	return []Rule{
		{
			Name:     "numa_bind_unknown",
			Severity: Error,
			Summary:  "A NUMA bind names a GPU or NUMA node the hardware does not have.",
			Check:    checkNUMABindUnknown,
		},
		{
			Name:     "numa_bind_wrong_node",
			Severity: Error,
			Summary:  "A GPU is bound to a NUMA node other than the one it is attached to.",
			Check:    checkNUMABindWrongNode,
		},
		{
			Name:     "numa_bind_duplicate",
			Severity: Error,
			Summary:  "A GPU is bound to NUMA nodes twice.",
			Check:    checkNUMABindDuplicate,
		},
		{
			Name:     "numa_bind_incomplete",
			Severity: Warning,
			Summary:  "NUMA binds leave some GPUs unbound.",
			Check:    checkNUMABindIncomplete,
		},
		{
			Name:     "gpu_nic_distance",
			Severity: Error,
			Summary:  "gpu_nic pairs a GPU with a NIC on another NUMA node or PCIe switch while a closer NIC exists.",
			Check:    checkGPUNICDistance,
		},
		{
			Name:     "gpu_nic_shared",
			Severity: Warning,
			Summary:  "Two GPUs share one NIC while another RDMA NIC is idle.",
			Check:    checkGPUNICShared,
		},
		{
			Name:     "affinity_unknown_device",
			Severity: Error,
			Summary:  "gpu_nic names a GPU or NIC that is not in the hardware profile.",
			Check:    checkAffinityUnknown,
		},
		{
			Name:     "nccl_env_nics",
			Severity: Error,
			Summary:  "NCCL_IB_HCA or NCCL_SOCKET_IFNAME does not match the declared NICs.",
			Check:    checkNCCLEnvNICs,
		},
	}
}

// bindTargets yields the binds of a node whose hardware lists GPUs.
func bindNodes(ctx *Context) []*spec.Node {
	var out []*spec.Node
	for _, n := range ctx.Nodes() {
		if n.NUMA != nil && n.Hardware != nil && len(n.Hardware.GPUs) > 0 {
			out = append(out, n)
		}
	}
	return out
}

func checkNUMABindUnknown(ctx *Context) {
	for _, n := range bindNodes(ctx) {
		nodes := numaNodes(n.Hardware)
		for _, b := range n.NUMA.Binds {
			if b == nil {
				continue
			}
			for _, g := range b.GPUs {
				if _, ok := n.Hardware.GPU(g.V); !ok {
					ctx.Report(g.Range,
						fmt.Sprintf("%s: NUMA bind names GPU %d, which the hardware does not have", nodeRef(n), g.V),
						fmt.Sprintf("The hardware profile %q declares GPUs %s. A bind for a missing GPU is a typo or a profile for another machine; numactl/cgroup settings derived from it would be wrong.", n.Hardware.Name, gpuIndexes(n.Hardware)))
				}
			}
			if b.Node.Set && !nodes[b.Node.V] {
				ctx.Report(b.Node.Range,
					fmt.Sprintf("%s: NUMA bind names NUMA node %d, which the hardware does not have", nodeRef(n), b.Node.V),
					fmt.Sprintf("The hardware profile %q has NUMA nodes %s. Binding to a node that does not exist makes numactl fail, so the job runs unbound.", n.Hardware.Name, intSet(nodes)))
			}
		}
	}
}

func checkNUMABindWrongNode(ctx *Context) {
	for _, n := range bindNodes(ctx) {
		for _, b := range n.NUMA.Binds {
			if b == nil || !b.Node.Set {
				continue
			}
			for _, g := range b.GPUs {
				hw, ok := n.Hardware.GPU(g.V)
				if !ok || hw.NUMA == b.Node.V {
					continue
				}
				ctx.Report(g.Range,
					fmt.Sprintf("%s: GPU %d is bound to NUMA node %d but is attached to NUMA node %d", nodeRef(n), g.V, b.Node.V, hw.NUMA),
					fmt.Sprintf("A process bound to the far socket copies every host↔device transfer and every GPUDirect buffer across the inter-socket link, which costs bandwidth and latency (NVIDIA CUDA best practices, NUMA: https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/index.html#numa-best-practices). Move GPU %d to the bind for node = %d.", g.V, hw.NUMA))
			}
		}
	}
}

func checkNUMABindDuplicate(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.NUMA == nil {
			continue
		}
		first := map[int]hcl.Range{}
		for _, b := range n.NUMA.Binds {
			if b == nil {
				continue
			}
			for _, g := range b.GPUs {
				if prev, ok := first[g.V]; ok {
					ctx.Report(g.Range,
						fmt.Sprintf("%s: GPU %d is bound twice", nodeRef(n), g.V),
						fmt.Sprintf("GPU %d was already bound at %s line %d. A GPU belongs to exactly one NUMA node; keep the bind that matches the hardware and remove this one.", g.V, prev.Filename, prev.Start.Line))
					continue
				}
				first[g.V] = g.Range
			}
		}
	}
}

func checkNUMABindIncomplete(ctx *Context) {
	for _, n := range bindNodes(ctx) {
		if len(n.NUMA.Binds) == 0 {
			continue
		}
		bound := map[int]bool{}
		for _, b := range n.NUMA.Binds {
			if b != nil {
				for _, g := range b.GPUs {
					bound[g.V] = true
				}
			}
		}
		var missing []string
		for _, g := range n.Hardware.GPUs {
			if !bound[g.Index] {
				missing = append(missing, fmt.Sprintf("%d (NUMA %d)", g.Index, g.NUMA))
			}
		}
		if len(missing) > 0 {
			ctx.Report(n.NUMA.DeclRange,
				fmt.Sprintf("%s: GPUs %s are not bound to a NUMA node", nodeRef(n), strings.Join(missing, ", ")),
				"Processes on unbound GPUs float across sockets and pay the inter-socket penalty on every host transfer. Add them to the bind of their own NUMA node.")
		}
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

// sortedGPUNIC returns the gpu_nic entries in GPU order, for stable output.
func sortedGPUNIC(a *spec.Affinity) []int {
	keys := make([]int, 0, len(a.GPUNIC))
	for k := range a.GPUNIC {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

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

func checkAffinityUnknown(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.Affinity == nil || n.Hardware == nil {
			continue
		}
		for _, gi := range sortedGPUNIC(n.Affinity) {
			nic := n.Affinity.GPUNIC[gi]
			if len(n.Hardware.GPUs) > 0 {
				if _, ok := n.Hardware.GPU(gi); !ok {
					ctx.Report(nic.Range,
						fmt.Sprintf("%s: gpu_nic pairs GPU %d, which the hardware does not have", nodeRef(n), gi),
						fmt.Sprintf("The hardware profile %q declares GPUs %s.", n.Hardware.Name, gpuIndexes(n.Hardware)))
				}
			}
			if _, ok := n.Hardware.NIC(nic.V); !ok {
				ctx.Report(nic.Range,
					fmt.Sprintf("%s: gpu_nic names NIC %q, which is not in the hardware profile", nodeRef(n), nic.V),
					fmt.Sprintf("%s. NCCL would be told to use a device that does not exist and falls back to sockets or fails at init. Use the RDMA device name as in /sys/class/infiniband.", nicNames(n.Hardware)))
			}
		}
	}
}

// ncclDeviceList parses an NCCL device filter (NCCL_IB_HCA,
// NCCL_SOCKET_IFNAME): comma-separated names, optional ":port", a leading
// "^" excludes, a leading "=" asks for exact names instead of prefixes
// (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
func ncclDeviceList(s string) (names []string, exclude, exact bool) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "^") {
		exclude, s = true, s[1:]
	}
	if strings.HasPrefix(s, "=") {
		exact, s = true, s[1:]
	}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if i := strings.IndexByte(p, ':'); i >= 0 {
			p = p[:i]
		}
		if p != "" {
			names = append(names, p)
		}
	}
	return names, exclude, exact
}

func deviceMatches(pattern, name string, exact bool) bool {
	if exact {
		return pattern == name
	}
	return strings.HasPrefix(name, pattern)
}

func checkNCCLEnvNICs(ctx *Context) {
	for _, n := range ctx.Nodes() {
		a := n.Affinity
		if a == nil || n.Hardware == nil {
			continue
		}
		if len(n.Hardware.NICs) == 0 {
			// Nothing to check the names against: say so rather than pass
			// silently (the GH200 module, for one, takes its NICs as input).
			for _, item := range a.NCCLIBHCA {
				ctx.ReportAs(Warning, item.Range,
					fmt.Sprintf("%s: NCCL_IB_HCA names %q, but the hardware profile lists no NICs", nodeRef(n), item.V),
					"gpuform cannot tell whether this HCA exists: a name that matches nothing makes NCCL fall back to TCP sockets without an error. Declare the node's NICs in its hardware (the gpuform/gh200 module takes them as the nics input).")
				break
			}
			continue
		}
		var included []string
		var exact, restrictive bool
		for _, item := range a.NCCLIBHCA {
			names, excl, ex := ncclDeviceList(item.V)
			if excl {
				continue
			}
			restrictive, exact = true, ex
			for _, name := range names {
				included = append(included, name)
				matched, rdma := false, false
				for _, nic := range n.Hardware.NICs {
					if deviceMatches(name, nic.Name, ex) {
						matched, rdma = true, rdma || nic.RDMA
					}
				}
				switch {
				case !matched:
					ctx.Report(item.Range,
						fmt.Sprintf("%s: NCCL_IB_HCA names %q, which matches no NIC in the hardware profile", nodeRef(n), name),
						fmt.Sprintf("%s. NCCL finds no matching HCA and silently falls back to TCP sockets, a 10x or larger slowdown across nodes. Name RDMA devices as listed by ibv_devices.", nicNames(n.Hardware)))
				case !rdma:
					ctx.Report(item.Range,
						fmt.Sprintf("%s: NCCL_IB_HCA names %q, which is not an RDMA NIC", nodeRef(n), name),
						"NCCL_IB_HCA selects InfiniBand/RoCE HCAs; a plain Ethernet port is never used by the IB transport. Remove it or mark the NIC rdma in the hardware profile if it is one.")
				}
			}
		}
		if restrictive {
			for _, gi := range sortedGPUNIC(a) {
				nic := a.GPUNIC[gi]
				hw, ok := n.Hardware.NIC(nic.V)
				if !ok || !hw.RDMA {
					continue
				}
				covered := false
				for _, p := range included {
					if deviceMatches(p, hw.Name, exact) {
						covered = true
					}
				}
				if !covered {
					ctx.ReportAs(Warning, nic.Range,
						fmt.Sprintf("%s: GPU %d is paired with %s, which NCCL_IB_HCA leaves out", nodeRef(n), gi, hw.Name),
						"NCCL only uses the HCAs NCCL_IB_HCA lists, so this pairing is never used. Add the NIC to nccl_ib_hca or drop nccl_ib_hca and let nccl_env derive it.")
				}
			}
		}
		if a.NCCLSocketIfname.Set {
			names, excl, ex := ncclDeviceList(a.NCCLSocketIfname.V)
			if excl {
				continue
			}
			for _, name := range names {
				matched := false
				for _, nic := range n.Hardware.NICs {
					if deviceMatches(name, nic.Netdev, ex) || deviceMatches(name, nic.Name, ex) {
						matched = true
					}
				}
				if !matched {
					ctx.Report(a.NCCLSocketIfname.Range,
						fmt.Sprintf("%s: NCCL_SOCKET_IFNAME %q matches no network interface in the hardware profile", nodeRef(n), name),
						fmt.Sprintf("%s. NCCL then finds no interface for bootstrap and fails at init (\"no socket interface found\"). Use a prefix of the netdev names (e.g. \"ens\" or \"=ib0\").", nicNames(n.Hardware)))
				}
			}
		}
	}
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

func intSet(m map[int]bool) string {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	var s []string
	for _, k := range ks {
		s = append(s, fmt.Sprint(k))
	}
	return strings.Join(s, ", ")
}
