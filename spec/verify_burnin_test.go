package spec_test

import (
	"testing"
	"time"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// TestVerifyBurnin: verify { burnin { duration, max_age } } reads two
// durations; each bad value is an error at its own line, and a max_age
// not longer than the duration is refused at max_age.
func TestVerifyBurnin(t *testing.T) {
	t.Parallel()
	src := func(body string) map[string][]byte {
		return map[string][]byte{"main.gpuform.hcl": []byte("node \"a\" {\n  hosts = [\"h1\"]\n  verify {\n    burnin {\n" + body + "    }\n  }\n}\n")}
	}
	cfg, diags := spec.LoadFiles(src("      duration = \"2h\"\n      max_age  = \"168h\"\n"), spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	b := cfg.Nodes[0].Verify.Burnin
	if b == nil || b.Duration.V.D != 2*time.Hour || b.MaxAge.V.D != 168*time.Hour {
		t.Fatalf("burnin = %+v", b)
	}
	cfg, diags = spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte("node \"a\" {\n  hosts = [\"h1\"]\n}\n")}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() || cfg.Nodes[0].Verify != nil && cfg.Nodes[0].Verify.Burnin != nil {
		t.Fatalf("no block: %v %+v", diags, cfg.Nodes[0].Verify)
	}
	for _, c := range []struct {
		name, body, summary string
		line                int
	}{
		{"not a duration", "      duration = \"four hours\"\n", "Invalid burnin duration", 5},
		{"duration too short", "      duration = \"10s\"\n", "Invalid burnin duration", 5},
		{"max_age too long", "      duration = \"4h\"\n      max_age = \"9000h\"\n", "Invalid burnin max_age", 6},
		{"expires before it ends", "      duration = \"4h\"\n      max_age = \"3h\"\n", "Invalid burnin max_age", 6},
		{"unknown attribute", "      maxage = \"3h\"\n", "Unsupported argument", 5},
	} {
		_, diags := spec.LoadFiles(src(c.body), spec.LoadOptions{BuiltinModules: modules.FS()})
		if len(diags) != 1 || diags[0].Summary != c.summary || diags[0].Subject == nil || diags[0].Subject.Start.Line != c.line {
			t.Errorf("%s: %v, want %q at line %d", c.name, diags, c.summary, c.line)
		}
	}
	_, diags = spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte("node \"a\" {\n  hosts = [\"h1\"]\n  verify {\n    burnin {}\n    burnin {}\n  }\n}\n")}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if !diags.HasErrors() || diags[0].Subject.Start.Line != 5 {
		t.Errorf("duplicate burnin: %v", diags)
	}
}
