package lint

import (
	"fmt"
)

// tensorParallelDomainRule declares tensor_parallel_domain.
func tensorParallelDomainRule() Rule {
	return Rule{
		Name:     "tensor_parallel_domain",
		Severity: Error,
		Summary:  "tensor_parallel is larger than the NVLink domain.",
		Check:    checkTensorParallel,
	}
}

func checkTensorParallel(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if !n.TensorParallel.Set || n.Hardware == nil {
			continue
		}
		domain := n.Hardware.NVLinkDomain
		if domain == 0 && n.Hardware.Interconnect == "pcie" {
			domain = 1
		}
		if domain == 0 || n.TensorParallel.V <= domain {
			continue
		}
		ctx.Report(n.TensorParallel.Range,
			fmt.Sprintf("%s: tensor_parallel = %d exceeds the NVLink domain of %d GPUs", nodeRef(n), n.TensorParallel.V, domain),
			"Tensor parallelism exchanges activations at every layer; a group larger than the NVLink domain sends that traffic over PCIe or the network and is several times slower (Megatron-LM keeps tensor-parallel groups within a node for this reason: https://docs.nvidia.com/nemo-framework/user-guide/latest/nemotoolkit/features/parallelisms.html). Use a tensor-parallel size of at most the NVLink domain and scale with pipeline or data parallelism.")
	}
}
