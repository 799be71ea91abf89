package spec_test

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/spec"
)

// TestUnknownGPUModel checks that a gpu_model outside the model table is an
// error at the gpu_model key with the nearest model name, and that
// gpu_model_unknown_ok = true accepts hardware newer than the table.
func TestUnknownGPUModel(t *testing.T) {
	table := &spec.GPUModelTable{
		Known: func(s string) bool {
			return s == "H100 SXM5 80GB" || s == "H100" || s == "L40S"
		},
		Names: []string{"H100 SXM5 80GB", "H200 SXM 141GB", "L40S"},
	}
	node := func(hw string) string {
		return "node \"a\" {\n  hosts = [\"gpu1\"]\n  hardware = {\n" + hw + "    gpu_count    = 8\n    interconnect = \"nvswitch\"\n  }\n}\n"
	}
	cases := map[string]struct {
		src      string
		table    *spec.GPUModelTable
		wantLine int // 0: no error
		want     string
	}{
		"typo":              {src: node("    gpu_model    = \"H100 SXM6 80GB\"\n"), table: table, wantLine: 4, want: `"H100 SXM6 80GB" is not a model of the knowledge base, so gpuform cannot check this GPU's driver, CUDA and NVLink requirements. Did you mean "H100 SXM5 80GB"?`},
		"known":             {src: node("    gpu_model    = \"H100 SXM5 80GB\"\n"), table: table},
		"family name":       {src: node("    gpu_model    = \"H100\"\n"), table: table},
		"escape":            {src: node("    gpu_model    = \"B300 SXM6 288GB\"\n    gpu_model_unknown_ok = true\n"), table: table},
		"escape false":      {src: node("    gpu_model    = \"B300 SXM6 288GB\"\n    gpu_model_unknown_ok = false\n"), table: table, wantLine: 4, want: "gpu_model_unknown_ok = true"},
		"no table no check": {src: node("    gpu_model    = \"H100 SXM6 80GB\"\n")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(c.src)}, spec.LoadOptions{GPUModels: c.table})
			var errs hcl.Diagnostics
			for _, d := range diags {
				if d.Severity == hcl.DiagError {
					errs = append(errs, d)
				}
			}
			if c.wantLine == 0 {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("want one error, got %v", errs)
			}
			d := errs[0]
			if d.Summary != spec.UnknownGPUModelSummary || d.Subject == nil || d.Subject.Start.Line != c.wantLine {
				t.Errorf("got %q at %v, want %q on line %d", d.Summary, d.Subject, spec.UnknownGPUModelSummary, c.wantLine)
			}
			if !strings.Contains(d.Detail, c.want) {
				t.Errorf("detail %q lacks %q", d.Detail, c.want)
			}
		})
	}
}
