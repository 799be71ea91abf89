package kb

import (
	"math"
	"testing"
)

// TestPCIeLinkRate checks the per-direction rates computed from the line
// codes against the figures the sources print (GB/s for x16: 4.0, 8.0,
// 15.75, 31.5, 63.0), so a wrong encoding or rate in the table fails here.
func TestPCIeLinkRate(t *testing.T) {
	kb := mustKB(t)
	tests := map[string]struct {
		gen, width int
		want       float64
	}{
		"gen1 x16": {1, 16, 4.0},
		"gen3 x16": {3, 16, 15.754},
		"gen4 x16": {4, 16, 31.508},
		"gen5 x16": {5, 16, 63.015},
		// A link trained to half its lanes carries half.
		"gen5 x8": {5, 8, 31.508},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			r, ok := kb.PCIeLinkRate(tt.gen)
			if !ok {
				t.Fatalf("generation %d not in pcie-link-rates.tsv", tt.gen)
			}
			if got := r.GBpsPerDirection(tt.width); math.Abs(got-tt.want) > 0.01 {
				t.Errorf("Gen%d x%d = %.3f GB/s, want %.3f", tt.gen, tt.width, got, tt.want)
			}
			if len(r.Sources) == 0 || r.Status == StatusUnknown {
				t.Errorf("Gen%d has no source or status", tt.gen)
			}
		})
	}
	if _, ok := kb.PCIeLinkRate(9); ok {
		t.Error("generation 9 answered")
	}
}

// TestHBMBandwidth checks that every row names a model and that the models
// bench meets on the simulated nodes answer.
func TestHBMBandwidth(t *testing.T) {
	kb := mustKB(t)
	for _, model := range []string{"H100 SXM5 80GB (HGX/DGX H100)", "A100 SXM4 80GB (HGX/DGX A100)", "H200 SXM 141GB (HGX/DGX H200)"} {
		m, ok := kb.HBMBandwidth(model)
		if !ok || m.GBps <= 0 || m.Kind != Peak || len(m.Sources) == 0 {
			t.Errorf("%s: %+v, %v", model, m, ok)
		}
	}
	if _, ok := kb.HBMBandwidth("L40S"); ok {
		t.Error("L40S has GDDR6, not HBM, and no row")
	}
}
