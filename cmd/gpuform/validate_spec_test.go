package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateRejectsWhatPlanRejects checks that validate, not only plan,
// refuses what is wrong with the spec itself, at its file and line, and
// that the message says what to write instead.
func TestValidateRejectsWhatPlanRejects(t *testing.T) {
	cases := map[string]struct {
		src  string
		args []string
		want []string
		not  []string
	}{
		"host in two node blocks": {
			src:  "node \"a\" {\n  hosts = [\"gpu[1-4]\"]\n}\nnode \"b\" {\n  hosts = [\"gpu3\"]\n}\n",
			want: []string{`Host gpu3 is in node "a" and node "b"`, "main.gpuform.hcl line 5", "main.gpuform.hcl:2,"},
		},
		"empty hosts": {
			src:  "node \"a\" {\n  hosts = []\n}\n",
			want: []string{"No hosts", "main.gpuform.hcl line 2"},
		},
		"mistyped module output": {
			src:  "module \"stack\" {\n  source = \"gpuform/stack-cuda12-8\"\n}\nnode \"a\" {\n  hosts = [\"gpu1\"]\n  driver {\n    version = module.stack.driver\n  }\n}\n",
			want: []string{"main.gpuform.hcl line 7", `Did you mean "driver_version"?`, "Its outputs: container_toolkit_version, cuda_version"},
		},
		"mistyped built-in module": {
			src:  "module \"hw\" {\n  source = \"gpuform/hgx-h100\"\n}\n",
			want: []string{"main.gpuform.hcl line 2", `Did you mean "gpuform/hgx-h100-8gpu"`, "Built-in modules: gpuform/a100-pcie-4gpu"},
			not:  []string{"file does not exist"},
		},
		// issue 30 item 1: HCL reads 12.10 as 12.1, and the plan installed
		// cuda-toolkit-12-1.
		"cuda version as a number": {
			src:  "node \"a\" {\n  hosts = [\"gpu1\"]\n  cuda {\n    version = 12.10\n  }\n}\n",
			want: []string{"Version must be a string", "main.gpuform.hcl line 4", `Write version = "12.10" (quoted): HCL reads 12.10 as the number 12.1.`},
			not:  []string{`"12.1"`},
		},
		"nccl version as a number through a variable": {
			src:  "variable \"nccl\" {\n  default = 2.20\n}\nnode \"a\" {\n  hosts = [\"gpu1\"]\n  nccl {\n    version = var.nccl\n  }\n}\n",
			want: []string{"Version must be a string", "main.gpuform.hcl line 7", `write its value as "2.20" (quoted)`},
		},
		// issue 30 item 2: a mistyped model passed validate, and lint could
		// only say it could not check it.
		"mistyped gpu_model": {
			src:  "node \"a\" {\n  hosts = [\"gpu1\"]\n  hardware = {\n    gpu_model    = \"H100 SXM6 80GB\"\n    gpu_count    = 8\n    interconnect = \"nvswitch\"\n  }\n}\n",
			want: []string{"Unknown GPU model", "main.gpuform.hcl line 4", `Did you mean "H100 SXM5 80GB"?`, "gpu_model_unknown_ok = true"},
		},
		"list variable from -var": {
			src:  "variable \"hosts\" {\n  type = list(string)\n}\nnode \"a\" {\n  hosts = var.hosts\n}\n",
			args: []string{"-var", "hosts=gpu001"},
			want: []string{"main.gpuform.hcl line 1", `-var 'hosts=["gpu001"]'`},
			not:  []string{"Variables not allowed"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), c.src)
			code, out, errOut := runCLI(t, "", append(append([]string{"validate"}, c.args...), dir)...)
			// Messages are wrapped to the terminal's width.
			all := strings.Join(strings.Fields(out+errOut), " ")
			if code != ExitFailed {
				t.Errorf("exit %d, want %d; output:\n%s", code, ExitFailed, all)
			}
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
			for _, n := range c.not {
				if strings.Contains(all, n) {
					t.Errorf("output has %q:\n%s", n, all)
				}
			}
		})
	}
}

// TestValidateWarnsTopologyUnchecked checks that a node without hardware
// whose workload and NUMA binds lint cannot check says so, and is still
// valid.
func TestValidateWarnsTopologyUnchecked(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `node "a" {
  hosts = ["gpu1"]
  numa {
    bind {
      gpus = [0]
      node = 0
    }
  }
  workload "llm" {
    parameters      = "70B"
    tensor_parallel = 8
  }
}
`)
	code, out, errOut := runCLI(t, "", "validate", dir)
	all := strings.Join(strings.Fields(out+errOut), " ")
	if code != ExitOK || !strings.Contains(all, "Warning: Topology rules skipped") || !strings.Contains(all, `its numa binds and workload "llm"`) {
		t.Errorf("exit %d, want 0 with the warning; output:\n%s", code, all)
	}
}

// TestLintConfigTopLevelRule checks that a tflint-style rule block at the
// top of a -config file is pointed to lint { }, at its line.
func TestLintConfigTopLevelRule(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"a\" {\n  hosts = [\"gpu1\"]\n}\n")
	cfgPath := filepath.Join(t.TempDir(), "lint.hcl")
	writeFile(t, cfgPath, "rule \"shm_size\" {\n  enabled = false\n}\n")
	code, out, errOut := runCLI(t, "", "lint", "-config", cfgPath, dir)
	all := strings.Join(strings.Fields(out+errOut), " ")
	if code != ExitFailed || !strings.Contains(all, "Rule block outside lint") || !strings.Contains(all, "lint.hcl line 1") || !strings.Contains(all, `lint { rule "shm_size" { ... } }`) {
		t.Errorf("exit %d, want 1 pointing the rule block into lint { }; output:\n%s", code, all)
	}
}

// TestValidateAcceptsUnknownGPUModelWhenDeclared checks the escape for
// hardware newer than the knowledge base: gpu_model_unknown_ok = true.
func TestValidateAcceptsUnknownGPUModelWhenDeclared(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"a\" {\n  hosts = [\"gpu1\"]\n  hardware = {\n    gpu_model            = \"H100 SXM6 80GB\"\n    gpu_model_unknown_ok = true\n    gpu_count            = 8\n    interconnect         = \"nvswitch\"\n  }\n}\n")
	code, out, errOut := runCLI(t, "", "validate", dir)
	if code != 0 || !strings.Contains(out, "Success!") {
		t.Errorf("exit %d, want 0; output:\n%s%s", code, out, errOut)
	}
}
