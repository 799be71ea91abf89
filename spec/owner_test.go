package spec_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuform/gpuform/spec"
)

// TestSpecName: gpuform { name } names the spec's resources on hosts; a
// spec that does not say is named after its directory; every node carries
// the name with the run's origin.
func TestSpecName(t *testing.T) {
	tests := map[string]struct {
		dir, src, want string
	}{
		"explicit":      {"anything", `gpuform { name = "hgx-training" }`, "hgx-training"},
		"directory":     {"team-b", ``, "team-b"},
		"odd directory": {"my spec!", ``, "my-spec"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tc.dir)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			src := tc.src + "\nnode \"n\" {\n  hosts = [\"sim://no-driver\"]\n}\n"
			if err := os.WriteFile(filepath.Join(dir, "main.gpuform.hcl"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, diags := spec.Load(dir, spec.LoadOptions{Origin: spec.Origin{Commit: "c0ffee"}})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if cfg.Name.V != tc.want {
				t.Errorf("name = %q, want %q", cfg.Name.V, tc.want)
			}
			if o := cfg.Nodes[0].Owner; o.Spec != tc.want || o.Commit != "c0ffee" {
				t.Errorf("node owner = %+v", o)
			}
		})
	}
}
