package lint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// TestExamplesLintClean lints every spec under ../examples: the specs new
// users copy must load and carry no error finding. Warnings are allowed
// (and logged), since some rest on unconfirmed data by design.
func TestExamplesLintClean(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "examples", "*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		specs, _ := filepath.Glob(filepath.Join(dir, "*"+spec.SpecFileSuffix))
		if len(specs) == 0 {
			continue
		}
		n++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cfg, diags := spec.Load(dir, spec.LoadOptions{BuiltinModules: modules.FS()})
			if diags.HasErrors() {
				t.Fatalf("example does not load:\n%s", diags.Error())
			}
			res, diags := Run(cfg, Options{Now: testNow})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			var errs []string
			for _, f := range res.Findings {
				line := findingLines([]Finding{f})[0]
				if f.Severity == Error {
					errs = append(errs, line)
				} else {
					t.Log(line)
				}
			}
			if len(errs) > 0 {
				t.Errorf("example has error findings:\n%s", strings.Join(errs, "\n"))
			}
		})
	}
	if n == 0 {
		t.Fatal("no examples found under ../examples")
	}
}
