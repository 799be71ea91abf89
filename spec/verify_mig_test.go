package spec_test

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// TestVerifyNVMLMIG: verify { nvml { mig } } takes "enabled" or
// "disabled"; any other word is an error at the attribute, with the
// nearest word suggested.
func TestVerifyNVMLMIG(t *testing.T) {
	src := func(v string) []byte {
		return []byte("node \"a\" {\n  hosts = [\"h1\"]\n  verify {\n    nvml {\n      mig = " + v + "\n    }\n  }\n}\n")
	}
	for v, want := range map[string]string{`"enabled"`: spec.MIGEnabled, `"disabled"`: spec.MIGDisabled} {
		cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": src(v)}, spec.LoadOptions{BuiltinModules: modules.FS()})
		if diags.HasErrors() {
			t.Fatalf("%s: %v", v, diags)
		}
		if m := cfg.Nodes[0].Verify.NVML.MIG; !m.Set || m.V != want {
			t.Errorf("%s: %+v", v, m)
		}
	}
	_, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": src(`"enable"`)}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if len(diags) != 1 || diags[0].Summary != `Invalid value for "mig"` || !strings.Contains(diags[0].Detail, `"enabled"`) ||
		!strings.Contains(diags[0].Detail, "Did you mean") || diags[0].Subject == nil || diags[0].Subject.Start.Line != 5 || diags[0].Subject.Start.Column != 13 {
		t.Errorf("diagnostics: %v", diags)
	}
}
