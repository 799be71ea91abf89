package lint

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/spec"
)

// workloadMemoryRule declares workload_memory.
func workloadMemoryRule() Rule {
	return Rule{
		Name:     "workload_memory",
		Severity: Error,
		Summary:  "A workload's model states (weights, gradients, optimizer states) do not fit in, or nearly fill, each GPU's memory.",
		Check:    checkWorkloadMemory,
	}
}

// memoryWarnFraction is the share of GPU memory above which model states
// leave too little for activations, buffers and the CUDA context: a
// warning, since activations depend on batch and sequence length, which the
// spec does not say.
const memoryWarnFraction = 0.85

// modelStates is the memory of a workload's model states on one GPU.
type modelStates struct {
	// Per-parameter bytes before any sharding.
	weights, grads, optimizer float64
	// perGPU is the parameter count each GPU holds a slice of after tensor
	// and pipeline parallelism.
	perGPU float64
	// Bytes is the total on one GPU after ZeRO sharding.
	Bytes float64
	// explain is the arithmetic, for the finding's detail.
	explain string
}

// workloadStates computes the memory the model states of w take on each
// GPU. The per-parameter counts are the ZeRO paper's (Rajbhandari et al.,
// https://arxiv.org/abs/1910.02054, section 3.1): mixed-precision Adam keeps
// 2 bytes of fp16/bf16 weights, 2 of gradients and K = 12 of fp32 states
// (master weights, momentum, variance) per parameter, 16 in all; ZeRO stage
// 1 shards the optimizer states over the data-parallel ranks, stage 2 the
// gradients too, stage 3 the weights too (section 5, figure 1). Tensor and
// pipeline parallelism split the parameters first (Megatron-LM,
// https://arxiv.org/abs/2104.04473). FP8 training keeps weights and
// optimizer states in higher precision and casts to FP8 per operation
// (Transformer Engine, https://docs.nvidia.com/deeplearning/transformer-engine/user-guide/examples/fp8_primer.html),
// so it is counted as bf16 mixed precision; FP8 inference holds 1 byte per
// weight.
func workloadStates(w *spec.Workload) modelStates {
	var m modelStates
	train := w.Optimizer.V != "none"
	switch {
	case !train:
		m.weights = map[string]float64{"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}[w.Precision.V]
	case w.Precision.V == "fp32":
		// Plain fp32: no master copy; Adam keeps momentum and variance.
		m.weights, m.grads = 4, 4
		m.optimizer = map[bool]float64{true: 4, false: 8}[w.Optimizer.V == "sgd"]
	default:
		// Mixed precision: fp32 master weights (4) plus momentum (4), and
		// for Adam the variance (4).
		m.weights, m.grads = 2, 2
		m.optimizer = map[bool]float64{true: 8, false: 12}[w.Optimizer.V == "sgd"]
	}
	mp := float64(w.TensorParallel.V * w.PipelineParallel.V)
	m.perGPU = w.Parameters.V / mp
	dp := float64(w.DataParallel.V)
	shard := func(stage int) float64 {
		if w.ZeroStage.V >= stage && dp > 1 {
			return 1 / dp
		}
		return 1
	}
	m.Bytes = m.perGPU * (m.weights*shard(3) + m.grads*shard(2) + m.optimizer*shard(1))

	var parts []string
	parts = append(parts, fmt.Sprintf("%s weights %g B", w.Precision.V, m.weights))
	if train {
		parts = append(parts, fmt.Sprintf("gradients %g B", m.grads), fmt.Sprintf("%s states %g B", optimizerName(w.Optimizer.V), m.optimizer))
	}
	zero := ""
	if w.ZeroStage.V > 0 && dp > 1 {
		zero = fmt.Sprintf(", ZeRO-%d sharding %s over %d data-parallel ranks", w.ZeroStage.V, map[int]string{1: "the optimizer states", 2: "gradients and optimizer states", 3: "weights, gradients and optimizer states"}[w.ZeroStage.V], w.DataParallel.V)
	}
	m.explain = fmt.Sprintf("%s parameters / (tensor %d × pipeline %d) = %s per GPU; %s per parameter%s → %s",
		countText(w.Parameters.V), w.TensorParallel.V, w.PipelineParallel.V, countText(m.perGPU), strings.Join(parts, " + "), zero, gbText(m.Bytes))
	return m
}

func optimizerName(o string) string {
	return map[string]string{"adamw": "AdamW", "adam": "Adam", "sgd": "SGD"}[o]
}

// countText writes a parameter count the way model cards do: "70B", "8.75B".
func countText(n float64) string {
	for _, u := range []struct {
		v float64
		s string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}} {
		if n >= u.v {
			return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.2f", n/u.v), "0"), ".0") + u.s
		}
	}
	return fmt.Sprintf("%.0f", n)
}

// gbText writes bytes in GB (10⁹ bytes), as NVIDIA's datasheets state GPU
// memory and the ZeRO paper states model-state sizes.
func gbText(b float64) string { return fmt.Sprintf("%.1f GB", b/1e9) }

func checkWorkloadMemory(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if len(n.Workloads) == 0 {
			continue
		}
		gpu, ok := gpuModel(ctx, n)
		if !ok || gpu.MemoryGB <= 0 {
			continue
		}
		capacity := gpu.MemoryGB * 1e9
		for _, w := range n.Workloads {
			if w == nil || !w.Parameters.Set {
				continue
			}
			m := workloadStates(w)
			share := m.Bytes / capacity
			detail := fmt.Sprintf("%s of the %s's %g GB (%.0f %%). Source of the arithmetic: the ZeRO paper's model-state memory (https://arxiv.org/abs/1910.02054); GPU memory: %s.",
				m.explain, n.Hardware.GPUModel, gpu.MemoryGB, share*100, cite(gpu.MemoryFact))
			switch {
			case share > 1:
				ctx.ReportAs(severityFor(gpu.MemoryFact, Error), w.Parameters.Range,
					fmt.Sprintf("%s: workload %q does not fit in GPU memory: %s of model states per GPU, %g GB available", nodeRef(n), w.Name, gbText(m.Bytes), gpu.MemoryGB),
					detail+" Shard more (a higher zero_stage, more tensor or pipeline parallelism), use a smaller precision, or use GPUs with more memory.")
			case share > memoryWarnFraction:
				ctx.ReportAs(Warning, w.Parameters.Range,
					fmt.Sprintf("%s: workload %q fills %.0f %% of GPU memory with model states", nodeRef(n), w.Name, share*100),
					detail+fmt.Sprintf(" Activations, communication buffers and the CUDA context need the rest; above %.0f %% a job usually runs out of memory once batches grow.", memoryWarnFraction*100))
			}
		}
	}
}
