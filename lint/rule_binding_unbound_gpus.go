package lint

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/spec"
)

// bindingUnboundGPUsRule declares binding_unbound_gpus.
func bindingUnboundGPUsRule() Rule {
	return Rule{
		Name:     "binding_unbound_gpus",
		Severity: Warning,
		Summary:  "Slurm GRES or the binding launcher is asked for, but no NUMA bind covers some GPUs.",
		Check:    checkBindingUnboundGPUs,
	}
}

// unboundGPUs lists the hardware's GPUs no numa bind names, as "4 (NUMA
// 1)", or "4" where the hardware does not place its GPUs.
func unboundGPUs(n *spec.Node) []string {
	bound := map[int]bool{}
	if n.NUMA != nil {
		for _, b := range n.NUMA.Binds {
			if b != nil {
				for _, g := range b.GPUs {
					bound[g.V] = true
				}
			}
		}
	}
	var out []string
	if len(n.Hardware.GPUs) > 0 {
		for _, g := range n.Hardware.GPUs {
			if !bound[g.Index] {
				out = append(out, fmt.Sprintf("%d (NUMA %d)", g.Index, g.NUMA))
			}
		}
		return out
	}
	for i := range gpuCount(n.Hardware) {
		if !bound[i] {
			out = append(out, fmt.Sprint(i))
		}
	}
	return out
}

// checkBindingUnboundGPUs covers what numa_bind_incomplete does not: a
// gres.conf whose lines would give some GPUs cores and others none, and a
// gpu_nic pairing (which `gpuform bind` applies) on a node with no binds
// at all. Partial binds without GRES are numa_bind_incomplete's.
func checkBindingUnboundGPUs(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.Hardware == nil {
			continue
		}
		gres := n.Slurm != nil && n.Slurm.GRES.V && !n.Slurm.GRESAutodetect.Set
		hasBinds := n.NUMA != nil && len(n.NUMA.Binds) > 0
		pairing := n.Affinity != nil && len(n.Affinity.GPUNIC) > 0
		if !gres && (!pairing || hasBinds) {
			continue
		}
		missing := unboundGPUs(n)
		if len(missing) == 0 {
			continue
		}
		if gres {
			ctx.Report(n.Slurm.GRES.Range,
				fmt.Sprintf("%s: gres.conf gives GPUs %s no cores: no numa bind names them", nodeRef(n), strings.Join(missing, ", ")),
				"gpuform writes a GPU's Cores= from the NUMA node it is bound to. Slurm ties GPUs to CPUs only through Cores= (https://slurm.schedmd.com/gres.conf.html#OPT_Cores): a GPU without it gets whatever cores the job has, so srun --gpu-bind=closest and --cpu-bind place its task anywhere, and when some lines have Cores= and others not slurmctld logs \"has CPUs configured for only some of the records\". Bind every GPU to its NUMA node (numa { bind { gpus, node } }, or the hardware profile's numa_binds).")
			continue
		}
		ctx.Report(n.Affinity.GPUNICRange,
			fmt.Sprintf("%s: gpu_nic pairs GPUs with NICs but no numa bind places GPUs %s", nodeRef(n), strings.Join(missing, ", ")),
			"apply records the pairing for `gpuform bind`, which then points each rank at its NIC but leaves its CPUs and memory wherever the scheduler put them, so the job crosses sockets on every host transfer (CUDA best practices, NUMA: https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/index.html#numa-best-practices). Add numa { bind { gpus, node } } blocks for every GPU, or the hardware profile's numa_binds.")
	}
}
