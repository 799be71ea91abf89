package spec_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// TestHostileInput loads specs and values that a careless or hurried user
// writes, the worst cases found by attacking the CLI by hand. Each must load
// without a panic and give exactly the error summaries listed (in any
// order), each pointing at a line of the spec when the case says so; no
// follow-on error may appear that blames something the user did not do.
func TestHostileInput(t *testing.T) {
	badVars := filepath.Join(t.TempDir(), "bad.gpuvars.hcl")
	if err := os.WriteFile(badVars, []byte("x = [1,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const node = "node \"a\" {\n  hosts = [\"h1\"]\n"
	cases := []struct {
		name    string
		src     string
		vars    []spec.VarArg
		env     []string
		want    []string // error summaries, as a multiset
		detail  string   // a substring one error's detail must contain
		secret  string   // text no summary or detail may contain
		located bool     // every error has a subject in the spec file
	}{{
		name: "hardware GPUs of different shapes",
		src: node + `  hardware = { gpu_model = "H100 SXM5 80GB", gpu_count = 2, interconnect = "pcie",
    gpus = [{ index = 0 }, { index = 1, numa = "x" }] }
}`,
		want:    []string{"Invalid hardware description"},
		detail:  "hardware.gpus[1].numa: number is required",
		located: true,
	}, {
		name:    "hardware written as a map",
		src:     node + "  hardware = tomap({ gpu_model = \"x\", gpu_count = \"1\", interconnect = \"pcie\", gpus = \"x\" })\n}",
		want:    []string{"Invalid hardware description"},
		detail:  "hardware.gpus: a list of objects is required",
		located: true,
	}, {
		name: "hardware from a map variable",
		src: `variable "hw" {
  type    = map(string)
  default = { gpu_model = "x", gpu_count = "1", interconnect = "pcie", colour = "red" }
}
` + node + "  hardware = var.hw\n}",
		want:    []string{"Invalid hardware description"},
		detail:  "hardware.colour: unknown attribute",
		located: true,
	}, {
		name:    "hardware NIC of the wrong kind",
		src:     node + "  hardware = { gpu_model = \"x\", gpu_count = 0, interconnect = \"pcie\", nics = [null, 3] }\n}",
		want:    []string{"Invalid hardware description", "Invalid hardware description"},
		detail:  "hardware.nics[1]: an object is required",
		located: true,
	}, {
		name: "required versions set to null",
		src: node + `  driver { version = null }
  cuda { version = null }
  shm { size = null }
  hugepages {
    size  = null
    count = null
  }
}`,
		want:    []string{"Missing required argument", "Missing required argument", "Missing required argument", "Missing required argument", "Missing required argument"},
		located: true,
	}, {
		name:    "inventory hosts null",
		src:     "inventory \"i\" {\n  hosts = null\n}\n",
		want:    []string{"Missing required argument"},
		located: true,
	}, {
		name:   "unparsable -var is the only error",
		src:    "variable \"x\" {\n  type = list(number)\n}\n",
		vars:   []spec.VarArg{{Value: "x=[1,2"}},
		want:   []string{"Unterminated tuple constructor expression"},
		detail: "no corresponding closing bracket",
	}, {
		name:    "-var of the wrong type is the only error",
		src:     "variable \"x\" {\n  type = list(number)\n}\n",
		vars:    []spec.VarArg{{Value: "x={a=1}"}},
		want:    []string{"Invalid value for variable"},
		detail:  "from -var x does not match",
		located: true,
	}, {
		name: "-var without a value is the only error",
		src:  "variable \"x\" {\n  type = list(number)\n}\n",
		vars: []spec.VarArg{{Value: "x"}},
		want: []string{"Invalid -var option"},
	}, {
		name: "unparsable -var-file is the only error",
		src:  "variable \"x\" {\n  type = list(number)\n}\n",
		vars: []spec.VarArg{{File: true, Value: badVars}},
		want: []string{"Missing expression"},
	}, {
		name: "unreadable -var-file is the only error",
		src:  "variable \"x\" {\n  type = list(number)\n}\n",
		vars: []spec.VarArg{{File: true, Value: filepath.Dir(badVars)}},
		want: []string{"Cannot read variables file"},
	}, {
		name: "unparsable environment value is the only error",
		src:  "variable \"x\" {\n  type = list(number)\n}\n",
		env:  []string{"GPUFORM_VAR_x=[1,"},
		want: []string{"Missing expression"},
	}, {
		name:    "a missing variable is still reported",
		src:     "variable \"x\" {\n  type = list(number)\n}\nvariable \"y\" {}\n",
		vars:    []spec.VarArg{{Value: "x=[1]"}},
		want:    []string{"No value for required variable"},
		located: true,
	}, {
		name: "two driver blocks from a dynamic block",
		src: node + `  dynamic "driver" {
    for_each = [1, 2]
    content {
      version = "580.95.05"
    }
  }
}`,
		want:    []string{"Duplicate driver block"},
		detail:  "Only one driver block is allowed here",
		located: true,
	}, {
		name:    "duplicate inventory names the article right",
		src:     "inventory \"i\" {\n  hosts = [\"h\"]\n}\ninventory \"i\" {\n  hosts = [\"g\"]\n}\n",
		want:    []string{"Duplicate inventory \"i\""},
		detail:  "An inventory \"i\" was already declared",
		located: true,
	}, {
		name:    "one lint rule configured twice",
		src:     "lint {\n  rule \"persistence_mode\" {\n    enabled = false\n  }\n  rule \"persistence_mode\" {\n    severity = \"error\"\n  }\n}\n",
		want:    []string{"Duplicate rule \"persistence_mode\""},
		detail:  "is already configured at main.gpuform.hcl:2",
		located: true,
	}, {
		name: "a sensitive value in the wrong attributes",
		src: `variable "token" {
  sensitive = true
  default   = "hunter2;x"
}
inventory "i" {
  hosts = ["h1"]
  user  = var.token
}
` + node + `  kernel_args = [var.token]
  driver {
    version = var.token
  }
}`,
		want:    []string{"Invalid user name", "Invalid kernel argument", "Invalid version"},
		detail:  "(sensitive value)",
		secret:  "hunter2",
		located: true,
	}, {
		name:    "a host that reads as an option",
		src:     "inventory \"i\" {\n  hosts = [\"-oProxyCommand\"]\n  jump  = \"-J\"\n}\n",
		want:    []string{"Invalid host pattern", "Invalid jump host"},
		detail:  "starts with '-'",
		located: true,
	}, {
		name:    "a default of the wrong type is the only error",
		src:     "variable \"b\" {\n  type    = number\n  default = \"x\"\n}\n",
		want:    []string{"Invalid default value for variable"},
		located: true,
	}, {
		name:    "a validation that refers to something else is one error",
		src:     "variable \"d\" {\n  default = 1\n  validation {\n    condition     = var.d > local.x\n    error_message = \"no\"\n  }\n}\n",
		want:    []string{"Invalid reference in variable validation"},
		located: true,
	}, {
		name: "keys written twice in literal maps",
		src: node + `  sysctl   = { "vm.swappiness" = 1, "vm.swappiness" = 60 }
  hardware = { gpu_model = "x", gpu_count = 1, interconnect = "pcie", gpus = [{ index = 0, index = 1 }] }
  affinity {
    gpu_nic = { 0 = "mlx5_0", "0" = "mlx5_1" }
  }
  container {
    ulimits = { memlock = "unlimited", memlock = "64KiB" }
  }
}`,
		want:    []string{"Duplicate key", "Duplicate key", "Duplicate key", "Duplicate key"},
		detail:  `The key "vm.swappiness" is already set at main.gpuform.hcl:3`,
		located: true,
	}, {
		name: "numa balancing set twice",
		src: node + `  sysctl = { "kernel.numa_balancing" = 1 }
  numa {
    balancing = false
  }
}`,
		want:    []string{"Conflicting settings"},
		detail:  "numa { balancing } at main.gpuform.hcl:5",
		located: true,
	}, {
		name: "huge pages reserved twice",
		src: node + `  sysctl = { "vm.nr_hugepages" = 1024 }
  hugepages {
    size  = "2MiB"
    count = 512
  }
}`,
		want:    []string{"Conflicting settings"},
		detail:  "the hugepages block at main.gpuform.hcl:4",
		located: true,
	}, {
		name: "kernel arguments that contradict each other or the hugepages block",
		src: node + `  kernel_args = ["iommu=pt", "iommu=off", "iommu=pt", "console=tty0", "console=ttyS0,115200", "hugepagesz=2M", "hugepages=512", "default_hugepagesz=2M"]
  hugepages {
    size  = "1GiB"
    count = 4
  }
}`,
		want:    []string{"Conflicting kernel arguments", "Conflicting settings"},
		detail:  `"iommu=off" contradicts "iommu=pt" at main.gpuform.hcl:3`,
		located: true,
	}, {
		// Deeper nesting overflows the Go stack inside the HCL parser:
		// a fatal error that no recover catches.
		name:    "brackets nested 200000 deep",
		src:     "locals {\n  a = " + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + "\n}\n",
		want:    []string{"Nesting too deep"},
		located: true,
	}, {
		name: "a -var nested 200000 deep",
		src:  "variable \"x\" {\n  type = list(any)\n}\n",
		vars: []spec.VarArg{{Value: "x=" + strings.Repeat("[", 200000) + strings.Repeat("]", 200000)}},
		want: []string{"Nesting too deep"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cfg *spec.Config
			var diags hcl.Diagnostics
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panic: %v", r)
					}
				}()
				cfg, diags = spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(c.src)}, spec.LoadOptions{
					VarArgs:        c.vars,
					Environ:        c.env,
					BuiltinModules: modules.FS(),
				})
			}()
			if cfg == nil {
				t.Fatal("LoadFiles returned no config")
			}
			got := map[string]int{}
			var details []string
			for _, d := range diags {
				if d.Severity != hcl.DiagError {
					continue
				}
				got[d.Summary]++
				details = append(details, d.Detail)
				if c.secret != "" && strings.Contains(d.Summary+d.Detail, c.secret) {
					t.Errorf("%q prints the sensitive value: %s", d.Summary, d.Detail)
				}
				if c.located && (d.Subject == nil || d.Subject.Filename != "main.gpuform.hcl" || d.Subject.Start.Line == 0) {
					t.Errorf("%q has no place in the spec: %v", d.Summary, d.Subject)
				}
			}
			want := map[string]int{}
			for _, s := range c.want {
				want[s]++
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("error summaries = %v, want %v\ndetails:\n%s", got, want, strings.Join(details, "\n"))
			}
			if c.detail != "" && !strings.Contains(strings.Join(details, "\n"), c.detail) {
				t.Errorf("no error detail contains %q; got:\n%s", c.detail, strings.Join(details, "\n"))
			}
		})
	}
}

// TestModuleArgumentWrongType checks that a module argument of the wrong
// type is reported once, and not a second time as missing.
func TestModuleArgumentWrongType(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "mod"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"main.gpuform.hcl":  "module \"m\" {\n  source = \"./mod\"\n  n      = \"eight\"\n}\n",
		"mod/m.gpuform.hcl": "variable \"n\" {\n  type = number\n}\noutput \"twice\" {\n  value = var.n * 2\n}\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, diags := spec.Load(dir, spec.LoadOptions{})
	var got []string
	for _, d := range diags {
		got = append(got, d.Summary)
	}
	if len(got) != 1 || got[0] != "Invalid value for module argument" {
		t.Errorf("diagnostics = %q, want only \"Invalid value for module argument\"", got)
	}
}

// TestVendoredBuiltinModule checks that a built-in module and a local copy
// of it under ./gpuform/NAME (the path its source string suggests) are two
// modules: the HCL parser caches files by name, and when both were named
// gpuform/NAME/FILE one silently got the other's text, depending on the
// working directory.
func TestVendoredBuiltinModule(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "gpuform", "hgx-h100-8gpu")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	stock, err := fs.ReadFile(modules.FS(), "hgx-h100-8gpu/hardware.gpuform.hcl")
	if err != nil {
		t.Fatal(err)
	}
	// The local copy's hardware output is broken on purpose.
	edited := strings.Replace(string(stock), "output \"hardware\" {", "output \"broken\" {\n  value = 1\n}\n\noutput \"hardware_x\" {", 1)
	if edited == string(stock) {
		t.Fatal("the built-in module has no hardware output to edit")
	}
	if err := os.WriteFile(filepath.Join(mod, "hardware.gpuform.hcl"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, use := range []string{"stock", "mine"} {
		src := "module \"mine\" {\n  source = \"./gpuform/hgx-h100-8gpu\"\n}\nmodule \"stock\" {\n  source = \"gpuform/hgx-h100-8gpu\"\n}\n" +
			"node \"a\" {\n  hosts    = [\"h1\"]\n  hardware = module." + use + ".hardware\n}\n"
		if err := os.WriteFile(filepath.Join(dir, "main.gpuform.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Run(use, func(t *testing.T) {
			t.Chdir(dir) // as when gpuform runs in the spec directory
			_, diags := spec.Load(".", spec.LoadOptions{BuiltinModules: modules.FS()})
			if got, want := diags.HasErrors(), use == "mine"; got != want {
				t.Errorf("errors = %v, want %v: %v", got, want, diags)
			}
		})
	}
}
