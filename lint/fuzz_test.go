package lint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// FuzzLint loads arbitrary spec text and lints whatever the loader returns,
// partial configs included: no rule may panic (Run reports a panic as an
// "Internal error" diagnostic, which fails the target).
func FuzzLint(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "rules", "*", "fires.gpuform.hcl"))
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("node \"n\" {\n  hosts = [\"h\"]\n  numa { bind {} }\n}\n")
	f.Fuzz(func(t *testing.T, src string) {
		cfg, _ := spec.LoadFiles(map[string][]byte{"f.gpuform.hcl": []byte(src)}, spec.LoadOptions{BuiltinModules: modules.FS()})
		_, diags := Run(cfg, Options{KB: testKB, Now: testNow})
		for _, d := range diags {
			if strings.HasPrefix(d.Summary, "Internal error") {
				t.Fatalf("%s: %s", d.Summary, d.Detail)
			}
		}
	})
}
