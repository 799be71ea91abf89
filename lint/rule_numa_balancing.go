package lint

import (
	"fmt"
)

// numaBalancingRule declares numa_balancing.
func numaBalancingRule() Rule {
	return Rule{
		Name:     "numa_balancing",
		Severity: Warning,
		Summary:  "Automatic NUMA balancing stays on for a multi-socket GPU node.",
		Check:    checkNUMABalancing,
	}
}

func checkNUMABalancing(ctx *Context) {
	hf, ok := ctx.hostFact("nccl-numa-balancing")
	if !ok {
		return
	}
	fact := hf.Fact
	for _, n := range ctx.Nodes() {
		if !multiSocket(n.Hardware) {
			continue
		}
		if n.NUMA != nil && n.NUMA.Balancing.Set && !n.NUMA.Balancing.V {
			continue
		}
		rng := n.DeclRange
		what := "numa { balancing } is not set, so the kernel default (on) stays"
		if n.NUMA != nil {
			rng = at(n.NUMA.Balancing, n.NUMA.DeclRange)
			if n.NUMA.Balancing.Set {
				what = "numa { balancing = true }"
			}
		}
		ctx.ReportAs(severityFor(fact, Warning), rng,
			fmt.Sprintf("%s: automatic NUMA balancing is on for a %d-NUMA-node machine", nodeRef(n), max(len(numaNodes(n.Hardware)), n.Hardware.CPUSockets)),
			fmt.Sprintf("%s. Kernel NUMA balancing migrates pages of pinned, GPU-bound processes between sockets and adds page faults to the data path; NVIDIA's CUDA best-practices and Grace tuning guides bind processes and turn it off (https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/index.html#numa-best-practices). %s Set numa { balancing = false }.", what, caveat(fact)))
	}
}
