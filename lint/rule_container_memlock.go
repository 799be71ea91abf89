package lint

import (
	"fmt"
)

// containerMemlockRule declares container_memlock.
func containerMemlockRule() Rule {
	return Rule{
		Name:     "container_memlock",
		Severity: Error,
		Summary:  "The memlock ulimit of containers is not unlimited on a node with RDMA NICs.",
		Check:    checkContainerMemlock,
	}
}

func checkContainerMemlock(ctx *Context) {
	_, fact, ok := ctx.kbShmFloor()
	if !ok {
		return
	}
	for _, n := range ctx.Nodes() {
		c := n.Container
		if c == nil || len(rdmaNICs(n.Hardware)) == 0 {
			continue
		}
		ml, ok := c.Ulimits["memlock"]
		if ok && ml.V.Unlimited {
			continue
		}
		rng := c.DeclRange
		what := "no memlock ulimit is set"
		if ok {
			rng, what = ml.Range, fmt.Sprintf("memlock is %s", ml.V)
		} else if c.UlimitsRange.Filename != "" {
			rng = c.UlimitsRange
		}
		ctx.ReportAs(severityFor(fact, Error), rng,
			fmt.Sprintf("%s: %s, but the node has RDMA NICs", nodeRef(n), what),
			fmt.Sprintf("RDMA (InfiniBand, RoCE, GPUDirect) registers pinned memory; with a bounded memlock limit NCCL's IB transport fails to register buffers or falls back to sockets. NVIDIA's NCCL guide runs containers with --ulimit memlock=-1 (%s). Set ulimits = { memlock = \"unlimited\" }.", cite(fact)))
	}
}
