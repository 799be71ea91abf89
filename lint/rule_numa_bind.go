package lint

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/spec"
)

// numaBindUnknownRule declares numa_bind_unknown.
func numaBindUnknownRule() Rule {
	return Rule{
		Name:     "numa_bind_unknown",
		Severity: Error,
		Summary:  "A NUMA bind names a GPU or NUMA node the hardware does not have.",
		Check:    checkNUMABindUnknown,
	}
}

// numaBindWrongNodeRule declares numa_bind_wrong_node.
func numaBindWrongNodeRule() Rule {
	return Rule{
		Name:     "numa_bind_wrong_node",
		Severity: Error,
		Summary:  "A GPU is bound to a NUMA node other than the one it is attached to.",
		Check:    checkNUMABindWrongNode,
	}
}

// numaBindDuplicateRule declares numa_bind_duplicate.
func numaBindDuplicateRule() Rule {
	return Rule{
		Name:     "numa_bind_duplicate",
		Severity: Error,
		Summary:  "A GPU is bound to NUMA nodes twice.",
		Check:    checkNUMABindDuplicate,
	}
}

// numaBindIncompleteRule declares numa_bind_incomplete.
func numaBindIncompleteRule() Rule {
	return Rule{
		Name:     "numa_bind_incomplete",
		Severity: Warning,
		Summary:  "NUMA binds leave some GPUs unbound.",
		Check:    checkNUMABindIncomplete,
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
