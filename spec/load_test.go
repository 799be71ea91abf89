package spec_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

func load(t *testing.T, dir string, opts spec.LoadOptions) *spec.Config {
	t.Helper()
	if opts.BuiltinModules == nil {
		opts.BuiltinModules = modules.FS()
	}
	cfg, diags := spec.Load(dir, opts)
	if diags.HasErrors() {
		t.Fatalf("unexpected errors: %s", diags.Error())
	}
	return cfg
}

// TestFullSpecDecodesEveryBlock loads a spec that writes every block and
// attribute of the language and checks each decoded value.
func TestFullSpecDecodesEveryBlock(t *testing.T) {
	cfg := load(t, "testdata/full", spec.LoadOptions{BinaryVersion: "0.1.0"})
	if cfg.RequiredVersion == nil || cfg.RequiredVersion.V != ">= 0.1" {
		t.Errorf("required_version = %v", cfg.RequiredVersion)
	}
	if len(cfg.Nodes) != 2 {
		t.Fatalf("got %d nodes", len(cfg.Nodes))
	}
	n := cfg.Nodes[0]
	inv := cfg.Inventories["train"]
	type flat struct {
		Hosts, InvUser, InvJump, InvBecome, FirstHost, LastHost                             string
		Driver, KernelModule, CUDA, NCCL, Runtime, Toolkit, ShmDefault, Shm, Memlock, Stack string
		Persist, FM, Peermem, Balancing, NCCLEnv, ECC                                       bool
		Binds                                                                               [][]int
		BindNodes                                                                           []int
		GPUNIC                                                                              map[int]string
		Sysctl                                                                              map[string]string
		KernelArgs                                                                          []string
		Images                                                                              []string
		GPUs, PCIeGen, Batch, MaxFail, HWGPUs                                               int
		NVLink, NCCLCmd, Drain, HWModel                                                     string
		BusBW                                                                               float64
	}
	got := flat{
		Hosts: n.Hosts[0].Inventory, InvUser: inv.User.V, InvJump: inv.Jump.V, InvBecome: inv.Become.V,
		FirstHost: n.Hosts[0].Name, LastHost: n.Hosts[len(n.Hosts)-1].Name,
		Driver: n.Driver.Version.V.Raw, KernelModule: string(n.Driver.KernelModule.V),
		CUDA: n.CUDA.Version.V.Raw, NCCL: n.NCCL.Version.V.Raw,
		Runtime: n.Container.Runtime.V, Toolkit: n.Container.NvidiaContainerToolkit.V.Raw,
		ShmDefault: n.Container.DefaultShmSize.V.String(), Shm: n.Shm.Size.V.String(),
		Memlock: n.Container.Ulimits["memlock"].V.String(), Stack: n.Container.Ulimits["stack"].V.String(),
		Persist: n.Driver.PersistenceMode.V, FM: n.Driver.FabricManager.V, Peermem: n.Driver.Peermem.V,
		Balancing: n.NUMA.Balancing.V, NCCLEnv: n.Affinity.NCCLEnv.V, ECC: n.Verify.NVML.ECC.V,
		GPUNIC: map[int]string{}, Sysctl: map[string]string{},
		GPUs: n.Verify.NVML.GPUs.V, PCIeGen: n.Verify.NVML.MinPCIeGen.V,
		Batch: n.Rollout.Batch.V, MaxFail: n.Rollout.MaxFailures.V, Drain: string(n.Rollout.Drain.V),
		NVLink: n.Verify.NVML.NVLink.V, NCCLCmd: n.Verify.NCCLTests[0].Command.V, BusBW: n.Verify.NCCLTests[0].MinBusBWGbps.V,
		HWModel: n.Hardware.GPUModel, HWGPUs: len(n.Hardware.GPUs),
	}
	for _, b := range n.NUMA.Binds {
		var g []int
		for _, x := range b.GPUs {
			g = append(g, x.V)
		}
		got.Binds = append(got.Binds, g)
		got.BindNodes = append(got.BindNodes, b.Node.V)
	}
	for k, v := range n.Affinity.GPUNIC {
		got.GPUNIC[k] = v.V
	}
	for k, v := range n.Sysctl {
		got.Sysctl[k] = v.V
	}
	for _, a := range n.KernelArgs {
		got.KernelArgs = append(got.KernelArgs, a.V)
	}
	for _, a := range n.Container.Images {
		got.Images = append(got.Images, a.V)
	}
	want := flat{
		Hosts: "train", InvUser: "ops", InvJump: "bastion.dc1.example.com", InvBecome: "sudo",
		FirstHost: "gpu001.dc1.example.com", LastHost: "gpu032.dc1.example.com",
		Driver: "550.127.08", KernelModule: "open", CUDA: "12.4.1", NCCL: "2.21.5",
		Runtime: "docker", Toolkit: "1.16.2", ShmDefault: "16GiB", Shm: "50%", Memlock: "unlimited", Stack: "64MiB",
		Persist: true, FM: true, Peermem: true, Balancing: false, NCCLEnv: true, ECC: true,
		Binds: [][]int{{0}, {1}}, BindNodes: []int{0, 1},
		GPUNIC:     map[int]string{0: "mlx5_0", 1: "mlx5_1"},
		Sysctl:     map[string]string{"vm.swappiness": "1"},
		KernelArgs: []string{"iommu=pt"},
		Images:     []string{"nvcr.io/nvidia/pytorch:24.05-py3"},
		GPUs:       8, PCIeGen: 5, Batch: 4, MaxFail: 1, Drain: "slurm",
		NVLink: "all_active", NCCLCmd: "all_reduce_perf -b 8 -e 8G -f 2 -g 8", BusBW: 350,
		HWModel: "H100-SXM5-80GB", HWGPUs: 2,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node train (-want +got):\n%s", diff)
	}

	x := cfg.Nodes[1]
	if len(x.Hosts) != 34 || x.Hosts[0].Name != "gpu1.lab" || x.Hosts[2].User != "ops" {
		t.Errorf("extras hosts: %d, first %+v", len(x.Hosts), x.Hosts[0])
	}
	checks := map[string]bool{
		"tensor_parallel":    x.TensorParallel.V == 8,
		"cpu_governor":       x.CPUGovernor.V == "performance",
		"dcgm":               x.DCGM.Version.V.Raw == "3.3.9",
		"hugepages":          x.Hugepages.Size.V.Bytes == 2<<20 && x.Hugepages.Count.V == 1024,
		"nccl_ib_hca":        len(x.Affinity.NCCLIBHCA) == 2 && x.Affinity.NCCLIBHCA[1].V == "mlx5_1:1",
		"nccl_socket_ifname": x.Affinity.NCCLSocketIfname.V == "^docker,lo",
		"containerd":         x.Container.Runtime.V == "containerd" && x.Container.DefaultRuntime.V,
		"nofile":             x.Container.Ulimits["nofile"].V.Bytes == 1048576 && x.Container.Ulimits["nproc"].V.Unlimited,
		"min_pcie_width":     x.Verify.NVML.MinPCIeWidth.V == 16 && x.Verify.NVML.MaxTemperatureC.V == 85,
		"timeout":            x.Verify.NCCLTests[0].Timeout.V == spec.Duration{Text: "10m", D: 10 * time.Minute},
		"reboot":             x.Rollout.Reboot.V == "allow",
		"output":             cfg.Outputs["hosts"].Value.LengthInt() == 32 && cfg.Outputs["hosts"].Description != "",
		"lint":               len(cfg.Lint.Rules) == 2 && !cfg.Lint.Rules[0].Enabled.V && cfg.Lint.Rules[0].Enabled.Set && cfg.Lint.Rules[1].Severity.V == "warning",
		"local":              cfg.Locals["cuda"].Value.AsString() == "12.4.1",
		"variable":           cfg.Variables["driver"].ValueSource == "default",
	}
	for name, ok := range checks {
		if !ok {
			t.Errorf("%s was not decoded as written", name)
		}
	}
	// Ranges point at the written expression.
	if r := n.Driver.Version.Range; r.Start.Line != 28 || r.Start.Column != 15 {
		t.Errorf("driver version range = %s", r)
	}
}

// TestVariablePrecedence checks Terraform's order: default < environment <
// *.auto.gpuvars.hcl < -var/-var-file in command-line order.
func TestVariablePrecedence(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.gpuform.hcl", `
variable "a" { default = "default" }
variable "b" { default = "default" }
variable "c" { default = "default" }
variable "d" { default = "default" }
variable "e" { default = "default" }
variable "gpus" {
  type    = list(number)
  default = []
}
`)
	write("x.auto.gpuvars.hcl", "c = \"auto-x\"\nd = \"auto-x\"\ne = \"auto-x\"\n")
	write("y.auto.gpuvars.hcl", "d = \"auto-y\"\n")
	write("cli.gpuvars.hcl", "e = \"file\"\n")
	cfg := load(t, dir, spec.LoadOptions{
		Environ: []string{"GPUFORM_VAR_b=env", "GPUFORM_VAR_c=env", "GPUFORM_VAR_gpus=[0, 1]", "GPUFORM_VAR_undeclared=x"},
		VarArgs: []spec.VarArg{
			{Value: "e=flag"},
			{File: true, Value: filepath.Join(dir, "cli.gpuvars.hcl")},
		},
	})
	got := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		got[n] = cfg.Variables[n].Value.AsString()
	}
	want := map[string]string{"a": "default", "b": "env", "c": "auto-x", "d": "auto-y", "e": "file"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if g := cfg.Variables["gpus"].Value; !g.Equals(cty.ListVal([]cty.Value{cty.NumberIntVal(0), cty.NumberIntVal(1)})).True() {
		t.Errorf("list from environment = %#v", g)
	}

	// -var for an undeclared variable is an error, with a suggestion.
	_, diags := spec.Load(dir, spec.LoadOptions{VarArgs: []spec.VarArg{{Value: "gpu=1"}}})
	if !diags.HasErrors() || !contains(diags, `Did you mean "gpus"?`) {
		t.Errorf("undeclared -var: %v", diags)
	}
	// A required variable with no value is an error at its declaration.
	write("req.gpuform.hcl", "variable \"needed\" {}\n")
	_, diags = spec.Load(dir, spec.LoadOptions{})
	if !diags.HasErrors() || diags[0].Subject == nil || diags[0].Subject.Filename != filepath.Join(dir, "req.gpuform.hcl") {
		t.Errorf("required variable: %v", diags)
	}
}

func contains(diags hcl.Diagnostics, s string) bool {
	for _, d := range diags {
		if strings.Contains(d.Detail, s) {
			return true
		}
	}
	return false
}

func TestModules(t *testing.T) {
	cfg := load(t, "testdata/localmod", spec.LoadOptions{VarArgs: []spec.VarArg{{Value: "gpus=4"}}})
	n := cfg.Nodes[0]
	if len(n.Hosts) != 4 || n.Hosts[3].Name != "rack1-gpu04" {
		t.Errorf("hosts from local module: %+v", n.Hosts)
	}
	if n.Verify.NVML.GPUs.V != 8 {
		t.Errorf("module output arithmetic: gpus = %d", n.Verify.NVML.GPUs.V)
	}
	if n.Hardware == nil || n.Hardware.GPUCount != 8 || len(n.Hardware.GPUs) != 8 || n.Hardware.Interconnect != "nvswitch" {
		t.Errorf("built-in hardware: %+v", n.Hardware)
	}
	if cfg.Modules["rack"].Config.Variables["prefix"].Value.AsString() != "rack1-gpu" {
		t.Errorf("module default not applied")
	}

	_, diags := spec.Load("testdata/selfmod", spec.LoadOptions{})
	if !diags.HasErrors() || diags[0].Summary != "Module includes itself" {
		t.Errorf("self-including module: %v", diags)
	}
	_, diags = spec.LoadFiles(map[string][]byte{"m.gpuform.hcl": []byte(`
module "x" {
  source = "./testdata/localmod/rack"
  gpu    = 1
}`)}, spec.LoadOptions{})
	if !diags.HasErrors() || diags[0].Summary != "Unsupported argument" || !contains(diags, `Did you mean "gpus"?`) {
		t.Errorf("unknown module argument: %v", diags)
	}
}

func TestCycles(t *testing.T) {
	cases := map[string]string{
		"self":                `locals { a = local.a }`,
		"three locals":        "locals {\n a = local.b\n b = local.c\n c = local.a\n}",
		"inventory via local": "locals { hosts = inventory.x.hosts }\ninventory \"x\" { hosts = local.hosts }",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			_, diags := spec.LoadFiles(map[string][]byte{"c.gpuform.hcl": []byte(src)}, spec.LoadOptions{})
			n := 0
			for _, d := range diags {
				if d.Summary == "Cycle in references" {
					n++
				}
			}
			if n != 1 {
				t.Errorf("want exactly one cycle error, got %v", diags)
			}
		})
	}
}

func TestFunctions(t *testing.T) {
	src := `
locals {
  hosts  = formatlist("gpu%02d", range(1, 4))
  joined = join(",", local.hosts)
  merged = merge({ a = 1 }, { b = 2 })
  look   = lookup(local.merged, "b", 0)
  host   = cidrhost("10.0.0.0/24", 5)
  sub    = cidrsubnet("10.0.0.0/16", 8, 2)
  mask   = cidrnetmask("10.0.0.0/12")
  up     = upper(format("%s-%d", "h", 1))
  tried  = try(local.merged.c, "none")
}`
	cfg, diags := spec.LoadFiles(map[string][]byte{"f.gpuform.hcl": []byte(src)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	got := map[string]string{}
	for _, k := range []string{"joined", "host", "sub", "mask", "up", "tried"} {
		got[k] = cfg.Locals[k].Value.AsString()
	}
	want := map[string]string{"joined": "gpu01,gpu02,gpu03", "host": "10.0.0.5", "sub": "10.0.2.0/24", "mask": "255.240.0.0", "up": "H-1", "tried": "none"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
