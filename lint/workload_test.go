package lint

import (
	"math"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/spec"
)

// workload builds a spec.Workload as the decoder would, defaults filled.
func workload(params float64, precision, optimizer string, zero, tp, pp, dp int) *spec.Workload {
	set := func(v int) spec.Attr[int] { return spec.Attr[int]{V: v, Set: true} }
	return &spec.Workload{
		Name:       "w",
		Parameters: spec.Attr[float64]{V: params, Set: true},
		Precision:  spec.Attr[string]{V: precision, Set: true},
		Optimizer:  spec.Attr[string]{V: optimizer, Set: true},
		ZeroStage:  set(zero), TensorParallel: set(tp), PipelineParallel: set(pp), DataParallel: set(dp),
	}
}

// TestWorkloadStatesPublished checks the model-state arithmetic against
// published figures, each case with its source. GB is 10⁹ bytes, as the
// sources write it.
func TestWorkloadStatesPublished(t *testing.T) {
	for _, tc := range []struct {
		name   string
		w      *spec.Workload
		wantGB float64
		source string
	}{
		// ZeRO paper, figure 1: Ψ = 7.5B, Nd = 64, K = 12.
		{"zero figure 1 baseline", workload(7.5e9, "fp16", "adam", 0, 1, 1, 64), 120, "https://arxiv.org/abs/1910.02054 figure 1"},
		{"zero figure 1 P_os", workload(7.5e9, "fp16", "adam", 1, 1, 1, 64), 31.4, "https://arxiv.org/abs/1910.02054 figure 1"},
		{"zero figure 1 P_os+g", workload(7.5e9, "fp16", "adam", 2, 1, 1, 64), 16.6, "https://arxiv.org/abs/1910.02054 figure 1"},
		{"zero figure 1 P_os+g+p", workload(7.5e9, "fp16", "adam", 3, 1, 1, 64), 1.9, "https://arxiv.org/abs/1910.02054 figure 1"},
		// ZeRO paper, section 3.1: GPT-2 with 1.5B parameters needs at
		// least 24 GB for mixed-precision Adam model states.
		{"gpt-2 1.5B", workload(1.5e9, "fp16", "adam", 0, 1, 1, 1), 24, "https://arxiv.org/abs/1910.02054 section 3.1"},
		// Megatron-LM, table 1: the 1008B model on 3072 A100-80GB with
		// tensor 8 × pipeline 64 (data parallel 6); it trained, so its
		// 16 bytes per parameter slice fits: 1008B / 512 × 16 B.
		{"megatron 1T", workload(1008e9, "fp16", "adam", 0, 8, 64, 6), 31.5, "https://arxiv.org/abs/2104.04473 table 1"},
		// Llama 3.1 405B: BF16 weights are 810 GB; FP8 halves them (NVIDIA's
		// FP8 model card: "reducing ... GPU memory requirements by
		// approximately 50%") so they fit one 8-GPU server (Meta).
		{"llama 3.1 405B bf16 on 8 GPUs", workload(405e9, "bf16", "none", 0, 8, 1, 1), 101.25, "https://huggingface.co/meta-llama/Llama-3.1-405B"},
		{"llama 3.1 405B fp8 on 8 GPUs", workload(405e9, "fp8", "none", 0, 8, 1, 1), 50.6, "https://huggingface.co/nvidia/Llama-3.1-405B-Instruct-FP8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := workloadStates(tc.w).Bytes / 1e9
			// The figure rounds to one decimal.
			if math.Abs(got-tc.wantGB) > 0.06 {
				t.Errorf("%.3f GB, want %.2f GB (%s)", got, tc.wantGB, tc.source)
			}
		})
	}
}

// TestWorkloadFitPublished runs the rule over published layouts on the GPUs
// they ran on (no finding) and over the same models where the arithmetic
// says they cannot fit (an error).
func TestWorkloadFitPublished(t *testing.T) {
	for _, tc := range []struct {
		name, hardware, workload string
		hosts                    int
		want                     string // "" for no workload_memory finding
	}{
		// Megatron-LM table 1 (https://arxiv.org/abs/2104.04473): 145.6B
		// at tensor 8 × pipeline 8 on A100-80GB; 16 B × 145.6B / 64 = 36 GB.
		{"megatron 145.6B as published", "dgx-a100", `parameters = "145.6B"
  precision = "fp16"
  optimizer = "adam"
  tensor_parallel = 8
  pipeline_parallel = 8
  data_parallel = 1`, 8, ""},
		{"megatron 145.6B without pipeline", "dgx-a100", `parameters = "145.6B"
  precision = "fp16"
  optimizer = "adam"
  tensor_parallel = 8
  data_parallel = 1`, 1, "error"},
		// Llama 3.1 405B served on one HGX H100 server in FP8 (Meta's
		// announcement: FP8 "allowing the model to run within a single
		// server node"), and in BF16, which cannot fit.
		{"llama 405B fp8 one node", "hgx-h100-8gpu", `parameters = "405B"
  precision = "fp8"
  optimizer = "none"
  tensor_parallel = 8`, 1, ""},
		{"llama 405B bf16 one node", "hgx-h100-8gpu", `parameters = "405B"
  precision = "bf16"
  optimizer = "none"
  tensor_parallel = 8`, 1, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hosts []string
			for i := range tc.hosts {
				hosts = append(hosts, `"gpu`+string(rune('a'+i))+`.example.com"`)
			}
			src := `module "hw" { source = "gpuform/` + tc.hardware + `" }
node "n" {
  hosts = [` + strings.Join(hosts, ", ") + `]
  hardware = module.hw.hardware
  workload "w" {
  ` + tc.workload + `
  }
}
`
			res := lintSource(t, src, Options{})
			var got []string
			for _, f := range res.Findings {
				if f.Rule == "workload_memory" {
					got = append(got, f.Severity.String()+": "+f.Summary+"\n"+f.Detail)
				}
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("published layout flagged:\n%s", strings.Join(got, "\n"))
			case tc.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], tc.want)):
				t.Errorf("want one %s, got %q", tc.want, got)
			}
		})
	}
}

// TestRenamedRule checks that a suppression naming tensor_parallel_domain,
// now part of workload_layout, still silences the finding and asks to be
// renamed.
func TestRenamedRule(t *testing.T) {
	src := `module "hw" { source = "gpuform/hgx-h100-8gpu" }
node "n" {
  hosts = ["a"]
  hardware = module.hw.hardware
  tensor_parallel = 16 # gpuform-ignore: tensor_parallel_domain -- measured, acceptable here
}
`
	res := lintSource(t, src, Options{})
	var layout, renamed int
	for _, f := range res.Findings {
		switch {
		case f.Rule == "workload_layout":
			layout++
		case f.Rule == ruleUnknownRule && strings.Contains(f.Summary, `"tensor_parallel_domain" is now part of "workload_layout"`):
			renamed++
		}
	}
	if layout != 0 || renamed != 1 {
		t.Errorf("workload_layout findings %d (want 0: suppressed), rename findings %d (want 1): %v", layout, renamed, res.Findings)
	}
}
