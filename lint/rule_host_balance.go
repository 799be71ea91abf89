package lint

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
)

// hostBalanceRule declares host_balance.
func hostBalanceRule() Rule {
	return Rule{
		Name:     "host_balance",
		Severity: Warning,
		Summary:  "A node that runs a workload gives its GPUs fewer CPU cores, less RAM or less local NVMe each than any of NVIDIA's own GPU server designs.",
		Check:    checkHostBalance,
	}
}

// checkHostBalance compares the per-GPU share of what the hardware object
// declares (cpu_cores, memory, nvme) with the smallest share among
// NVIDIA's DGX designs (host-designs.tsv). Only nodes with a workload block
// are judged: the shares matter for feeding a job's GPUs, and a node
// without one says nothing about what will run there. Measures the
// hardware object does not give are not judged.
func checkHostBalance(ctx *Context) {
	share, ok := ctx.kb().MinHostShare()
	if !ok {
		return
	}
	for _, n := range ctx.Nodes() {
		hw := n.Hardware
		if hw == nil || hw.GPUCount <= 0 || !hasWorkload(n) {
			continue
		}
		gpus := hw.GPUCount
		var short []string
		var from []kb.HostDesign
		if hw.CPUCores > 0 {
			if per := float64(hw.CPUCores) / float64(gpus); per < share.CoresPerGPU {
				short = append(short, fmt.Sprintf("%d CPU cores / %d GPUs = %s cores per GPU, below the %s of %s", hw.CPUCores, gpus, trimFloat(per), trimFloat(share.CoresPerGPU), share.CoresFrom.Name))
				from = append(from, share.CoresFrom)
			}
		}
		if hw.Memory.Bytes > 0 {
			if per := hw.Memory.Bytes / uint64(gpus); per < share.MemoryPerGPU {
				short = append(short, fmt.Sprintf("memory %s / %d GPUs = %s per GPU, below the %s of %s", spec.FormatBytes(hw.Memory.Bytes), gpus, gib(per), gib(share.MemoryPerGPU), share.MemoryFrom.Name))
				from = append(from, share.MemoryFrom)
			}
		}
		if hw.NVMe.Bytes > 0 {
			if per := hw.NVMe.Bytes / uint64(gpus); per < share.NVMePerGPU {
				short = append(short, fmt.Sprintf("local NVMe %s / %d GPUs = %s per GPU, below the %s of %s", gb(hw.NVMe.Bytes), gpus, gb(per), gb(share.NVMePerGPU), share.NVMeFrom.Name))
				from = append(from, share.NVMeFrom)
			}
		}
		if len(short) == 0 {
			continue
		}
		var sources []string
		seen := map[string]bool{}
		for _, d := range from {
			for _, s := range d.Sources {
				if !seen[s] {
					seen[s] = true
					sources = append(sources, s)
				}
			}
		}
		ctx.Report(hw.Range,
			fmt.Sprintf("%s: the hardware gives each GPU less than NVIDIA's own designs (%s)", nodeRef(n), strings.Join(measureNames(short), ", ")),
			fmt.Sprintf("%s. Data loading (decoding, augmentation, tokenisation) runs on the CPU cores, the page cache and pinned staging buffers live in RAM, and datasets and checkpoints are read from and written to local NVMe; NVIDIA's DGX systems give each GPU at least these shares (derived: the smallest per-GPU share among the designs of the knowledge base's host-designs.tsv, from NVIDIA's own published system descriptions: %s). A leaner host can be right for a workload that streams little data; if so, turn the rule off for it (lint { rule \"host_balance\" { enabled = false } }) or mark the line with a gpuform-ignore comment.",
				strings.Join(short, "; "), strings.Join(sources, " ; ")))
	}
}

func hasWorkload(n *spec.Node) bool {
	for _, w := range n.Workloads {
		if w != nil {
			return true
		}
	}
	return false
}

// measureNames names the measures of the short list for the summary.
func measureNames(short []string) []string {
	var out []string
	for _, s := range short {
		switch {
		case strings.Contains(s, "CPU cores"):
			out = append(out, "CPU cores")
		case strings.HasPrefix(s, "memory"):
			out = append(out, "RAM")
		default:
			out = append(out, "local NVMe")
		}
	}
	return out
}

func trimFloat(f float64) string { return strings.TrimSuffix(fmt.Sprintf("%.2f", f), ".00") }

// gib writes bytes in GiB, as RAM is sized.
func gib(b uint64) string { return trimFloat(float64(b)/(1<<30)) + " GiB" }

// gb writes bytes in GB, as drive makers (and NVIDIA's storage figures) count.
func gb(b uint64) string { return trimFloat(float64(b)/1e9) + " GB" }
