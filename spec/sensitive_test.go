package spec_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// TestSensitiveDerivedValues checks that a value computed from a sensitive
// variable, however short, is never printed by a diagnostic, and that the
// decoded attribute says it is sensitive.
func TestSensitiveDerivedValues(t *testing.T) {
	const head = "variable \"s\" {\n  sensitive = true\n  default   = \"abq\"\n}\nnode \"a\" {\n  hosts = [\"h1\"]\n"
	cases := []struct {
		name    string
		src     string
		want    string   // an error summary that must appear; "" for none
		secrets []string // texts no diagnostic may contain
		check   func(t *testing.T, cfg *spec.Config)
	}{{
		name:    "upper of a sensitive value as a driver version",
		src:     head + "  driver {\n    version = upper(var.s)\n  }\n}\n",
		want:    "Invalid version",
		secrets: []string{"ABQ", "abq"},
	}, {
		name:    "a function that quotes its argument in its error",
		src:     head + "  tensor_parallel = tonumber(\"x${var.s}\")\n}\n",
		want:    "Invalid function argument",
		secrets: []string{"xabq", "abq"},
	}, {
		name:    "a sensitive value in an enum",
		src:     head + "  cpu_governor = \"p-${var.s}\"\n}\n",
		want:    "Invalid value for \"cpu_governor\"",
		secrets: []string{"p-abq", "abq"},
	}, {
		name:    "a sensitive sysctl value that is not a sysctl value",
		src:     head + "  sysctl = { \"vm.x\" = \"${var.s};\" }\n}\n",
		want:    "Invalid sysctl",
		secrets: []string{"abq;", "abq"},
	}, {
		name:    "a sensitive size",
		src:     head + "  shm {\n    size = var.s\n  }\n}\n",
		want:    "Invalid size",
		secrets: []string{"abq"},
	}, {
		name:    "a sensitive host name",
		src:     "variable \"s\" {\n  sensitive = true\n  default   = \"gpu7\"\n}\nnode \"a\" {\n  hosts = [var.s]\n}\n",
		want:    "Sensitive value not allowed here",
		secrets: []string{"gpu7"},
	}, {
		name:    "a sensitive map of sysctls",
		src:     "variable \"s\" {\n  sensitive = true\n  default   = { \"vm.x\" = \"1\" }\n}\nnode \"a\" {\n  hosts = [\"h1\"]\n  sysctl = var.s\n}\n",
		want:    "Sensitive value not allowed here",
		secrets: []string{"vm.x"},
	}, {
		// gres.conf is world-readable and plans show its lines.
		name:    "a sensitive GRES type",
		src:     head + "  hardware = { gpu_model = \"H100\", gpu_count = 1, interconnect = \"pcie\" }\n  slurm {\n    gres      = true\n    gres_type = var.s\n  }\n}\n",
		want:    "Sensitive value not allowed here",
		secrets: []string{"abq"},
	}, {
		name: "a valid sensitive sysctl value is decoded as sensitive",
		src:  head + "  sysctl = { \"vm.x\" = lower(var.s), \"vm.y\" = \"1\" }\n}\n",
		check: func(t *testing.T, cfg *spec.Config) {
			sc := cfg.Nodes[0].Sysctl
			if !sc["vm.x"].Sensitive || sc["vm.x"].V != "abq" || sc["vm.y"].Sensitive {
				t.Errorf("sysctl = %+v, want vm.x sensitive and vm.y not", sc)
			}
			if got := cfg.Redactor().Redact(`value "abq" and abq, not abqx`); got != `value (sensitive value) and (sensitive value), not abqx` {
				t.Errorf("Redact = %q", got)
			}
		},
	}, {
		name: "a sensitive output of a module stays sensitive",
		src:  "module \"m\" {\n  source = \"./m\"\n}\nnode \"a\" {\n  hosts = [\"h1\"]\n  driver {\n    version = module.m.v\n  }\n}\n",
		check: func(t *testing.T, cfg *spec.Config) {
			if d := cfg.Nodes[0].Driver; d == nil || !d.Version.Sensitive || d.Version.V.Raw != "550.1.2" {
				t.Errorf("driver = %+v, want a sensitive 550.1.2", d)
			}
		},
	}}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m", "main.gpuform.hcl"), []byte("output \"v\" {\n  value     = \"550.1.2\"\n  sensitive = true\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(c.src)}, spec.LoadOptions{BuiltinModules: modules.FS()})
			found := c.want == ""
			var all []string
			for _, d := range diags {
				all = append(all, d.Summary+": "+d.Detail)
				if d.Summary == c.want {
					found = true
				}
				for _, s := range c.secrets {
					if strings.Contains(d.Summary+d.Detail, s) {
						t.Errorf("%q prints %q: %s", d.Summary, s, d.Detail)
					}
				}
			}
			if !found {
				t.Errorf("no %q error; got:\n%s", c.want, strings.Join(all, "\n"))
			}
			if c.want == "" && diags.HasErrors() {
				t.Fatalf("unexpected errors:\n%s", strings.Join(all, "\n"))
			}
			if c.check != nil && !diags.HasErrors() {
				c.check(t, cfg)
			}
		})
	}
}

// TestRedactor pins where the second line of defence replaces a sensitive
// text: quoted at any length, bare only as a whole token of 3 characters
// or more, never inside a longer word, number or version.
func TestRedactor(t *testing.T) {
	cases := []struct {
		name, secret, in, want string
	}{
		{"quoted short value", "on", `value "on" is wrong; one of "only"`, `value (sensitive value) is wrong; one of "only"`},
		{"bare short value is left", "12", "main.gpuform.hcl:12,3-5", "main.gpuform.hcl:12,3-5"},
		{"bare token", "abq", "driver abq. Use abq2 or xabq", "driver (sensitive value). Use abq2 or xabq"},
		{"inside a version", "550", "driver 550.54.15 (R550) and 550", "driver 550.54.15 (R550) and (sensitive value)"},
		{"at both ends", "abq", "abq-abq", "abq-abq"},
		{"whole text", "abq", "abq", "(sensitive value)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := spec.NewRedactor([]string{c.secret}).Redact(c.in); got != c.want {
				t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
	if got := spec.NewRedactor(nil).Redact("abq"); got != "abq" {
		t.Errorf("an empty Redactor changed the text: %q", got)
	}
}
