package spec

import (
	"testing"

	"github.com/hashicorp/hcl/v2/hclparse"
)

// BenchmarkParseOnly1000 is the floor: hclparse alone on a 1,000-node spec.
func BenchmarkParseOnly1000(b *testing.B) {
	src := genFleetSpec(1000)
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := hclparse.NewParser()
		if _, diags := p.ParseHCL(src, "fleet.gpuform.hcl"); diags.HasErrors() {
			b.Fatal(diags)
		}
	}
}

// BenchmarkLoad1000 loads and evaluates the same spec; the goal is under 2x
// BenchmarkParseOnly1000.
func BenchmarkLoad1000(b *testing.B) {
	src := genFleetSpec(1000)
	b.SetBytes(int64(len(src)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cfg, diags := LoadFiles(map[string][]byte{"fleet.gpuform.hcl": src}, LoadOptions{})
		if diags.HasErrors() || len(cfg.Nodes) != 1000 {
			b.Fatal(diags)
		}
	}
}
