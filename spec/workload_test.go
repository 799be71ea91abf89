package spec_test

import (
	"testing"

	"github.com/gpuform/gpuform/spec"
)

func TestParseCount(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"70B", 70e9, true},
		{"1.5T", 1.5e12, true},
		{"350M", 350e6, true},
		{"125k", 125e3, true},
		{"7G", 7e9, true},
		{" 13 B ", 13e9, true},
		{"7000000000", 7e9, true},
		{"70 billion", 0, false},
		{"B", 0, false},
		{"", 0, false},
		{"NaN", 0, false},
		{"InfB", 0, false},
	} {
		got, err := spec.ParseCount(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseCount(%q) = %g, %v; want %g, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestWorkloadDefaults(t *testing.T) {
	cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(`node "a" {
  hosts = ["gpu1"]
  workload "w" { parameters = 7000000000 }
}
`)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	w := cfg.Nodes[0].Workloads[0]
	if w.Parameters.V != 7e9 || w.Precision.V != "bf16" || w.Optimizer.V != "adamw" || w.ZeroStage.V != 0 || w.GPUs() != 1 {
		t.Errorf("defaults: %+v", w)
	}
}
