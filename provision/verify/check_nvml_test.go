//go:build cgo

package verify

import (
	"testing"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// TestGPUModelWholeTokens: the spec's model must name the GPU, not a
// prefix of another model's name (A10 is not an A100, L4 not an L40S).
func TestGPUModelWholeTokens(t *testing.T) {
	tests := []struct {
		model, name string
		pass        bool
	}{
		{"H100", "NVIDIA H100 80GB HBM3", true},
		{"A100", "NVIDIA A100-SXM4-80GB", true},
		{"a100", "A100-SXM4-40GB", true},
		{"L40S", "NVIDIA L40S", true},
		{"H100 80GB", "NVIDIA H100 80GB HBM3", true},
		{"A10", "NVIDIA A100-SXM4-80GB", false},
		{"L4", "NVIDIA L40S", false},
		{"L40", "NVIDIA L40S", false},
		{"H20", "NVIDIA H200", false},
		{"H100 SXM", "NVIDIA H100 80GB HBM3", false},
	}
	for _, tt := range tests {
		t.Run(tt.model+" on "+tt.name, func(t *testing.T) {
			rep := &nvmlfacts.Report{GPUs: []nvmlfacts.GPU{{Index: 0, Name: tt.name}}}
			var got *CheckResult
			for _, r := range checkNVML(Expectation{KB: testKB, GPUModel: tt.model}, rep) {
				if r.ID == "nvml.gpu_model" {
					got = &r
				}
			}
			if got == nil || (got.Status == StatusPass) != tt.pass {
				t.Errorf("%+v, want pass=%v", got, tt.pass)
			}
		})
	}
}

// checkNVML identifies the GPUs and judges them, as the NVML path of
// verify does in two steps.
func checkNVML(exp Expectation, rep *nvmlfacts.Report) []CheckResult {
	rep, id := identify(exp, rep)
	return checkNVMLIdentified(exp, rep, id)
}
