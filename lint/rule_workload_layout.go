package lint

import (
	"fmt"

	"github.com/gpuform/gpuform/spec"
)

// workloadLayoutRule declares workload_layout. It holds what was the
// tensor_parallel_domain rule (renamedRules maps the old name).
func workloadLayoutRule() Rule {
	return Rule{
		Name:     "workload_layout",
		Severity: Error,
		Summary:  "A workload's parallel layout needs more GPUs than the node's hosts have, leaves GPUs idle, or stretches tensor parallelism past the NVLink domain.",
		Check:    checkWorkloadLayout,
	}
}

// nvlinkDomain is how many GPUs reach each other over NVLink: the
// hardware's domain, 1 for PCIe-only boards; 0 when unknown.
func nvlinkDomain(h *spec.Hardware) int {
	if h == nil {
		return 0
	}
	if h.NVLinkDomain == 0 && h.Interconnect == "pcie" {
		return 1
	}
	return h.NVLinkDomain
}

func checkWorkloadLayout(ctx *Context) {
	for _, n := range ctx.Nodes() {
		domain := nvlinkDomain(n.Hardware)
		if n.TensorParallel.Set && domain > 0 && n.TensorParallel.V > domain {
			reportTensorDomain(ctx, n, "tensor_parallel", n.TensorParallel, domain)
		}
		for _, w := range n.Workloads {
			if w == nil {
				continue
			}
			if w.TensorParallel.Set && domain > 0 && w.TensorParallel.V > domain {
				reportTensorDomain(ctx, n, fmt.Sprintf("workload %q: tensor_parallel", w.Name), w.TensorParallel, domain)
			}
			perHost := gpuCount(n.Hardware)
			if perHost == 0 || len(n.Hosts) == 0 {
				continue
			}
			have, need := perHost*len(n.Hosts), w.GPUs()
			layout := fmt.Sprintf("tensor %d × pipeline %d × data %d = %d GPUs", w.TensorParallel.V, w.PipelineParallel.V, w.DataParallel.V, need)
			hosts := fmt.Sprintf("%d %s × %d GPUs = %d", len(n.Hosts), map[bool]string{true: "host", false: "hosts"}[len(n.Hosts) == 1], perHost, have)
			switch {
			case need > have:
				ctx.Report(w.DeclRange,
					fmt.Sprintf("%s: workload %q needs %d GPUs, its hosts have %d", nodeRef(n), w.Name, need, have),
					fmt.Sprintf("The layout is %s; the node block's hosts provide %s. The job cannot start with this layout on these hosts: add hosts, or lower data_parallel (or pipeline_parallel) until the product fits.", layout, hosts))
			case need < have:
				ctx.ReportAs(Warning, w.DeclRange,
					fmt.Sprintf("%s: workload %q leaves %d of %d GPUs idle", nodeRef(n), w.Name, have-need, have),
					fmt.Sprintf("The layout is %s; the node block's hosts provide %s. Raise data_parallel to use them, or move the idle hosts to another node block.", layout, hosts))
			}
		}
	}
}

func reportTensorDomain(ctx *Context, n *spec.Node, what string, tp spec.Attr[int], domain int) {
	ctx.Report(tp.Range,
		fmt.Sprintf("%s: %s = %d exceeds the NVLink domain of %d GPUs", nodeRef(n), what, tp.V, domain),
		"Tensor parallelism exchanges activations at every layer; a group larger than the NVLink domain sends that traffic over PCIe or the network and is several times slower (Megatron-LM keeps tensor-parallel groups within a node for this reason: https://arxiv.org/abs/2104.04473, https://docs.nvidia.com/nemo-framework/user-guide/latest/nemotoolkit/features/parallelisms.html). Use a tensor-parallel size of at most the NVLink domain and scale with pipeline or data parallelism.")
}
