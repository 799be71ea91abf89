package modules_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// moduleDirs lists every built-in module: each directory of this package
// that holds at least one *.gpuform.hcl file.
func moduleDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "testdata" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(e.Name(), "*.gpuform.hcl"))
		if len(files) == 0 {
			t.Errorf("directory %s holds no *.gpuform.hcl file; every folder here is a built-in module", e.Name())
			continue
		}
		dirs = append(dirs, e.Name())
	}
	sort.Strings(dirs)
	if len(dirs) == 0 {
		t.Fatal("no built-in modules found")
	}
	return dirs
}

func isStack(dir string) bool { return strings.HasPrefix(dir, "stack-") }

// moduleSchema is what a module file may contain at the top level: modules
// describe hardware or software sets and never target hosts themselves.
var moduleSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "output", LabelNames: []string{"name"}},
		{Type: "module", LabelNames: []string{"name"}},
	},
}

func TestModulesHoldOnlyModuleBlocks(t *testing.T) {
	for _, dir := range moduleDirs(t) {
		t.Run(dir, func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(dir, "*.gpuform.hcl"))
			p := hclparse.NewParser()
			for _, f := range files {
				file, diags := p.ParseHCLFile(f)
				if diags.HasErrors() {
					t.Fatalf("%s: %s", f, diags.Error())
				}
				if _, diags := file.Body.Content(moduleSchema); diags.HasErrors() {
					t.Errorf("%s: only variable, locals, output and module blocks belong in a module: %s", f, diags.Error())
				}
			}
		})
	}
}

// TestEmbeddedModulesMatchFolders guards the //go:embed pattern: every folder
// here must reach the binary, file for file.
func TestEmbeddedModulesMatchFolders(t *testing.T) {
	for _, dir := range moduleDirs(t) {
		onDisk, _ := filepath.Glob(filepath.Join(dir, "*.gpuform.hcl"))
		for _, f := range onDisk {
			want, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fs.ReadFile(modules.FS(), filepath.ToSlash(f))
			if err != nil {
				t.Errorf("%s is not embedded: %v", f, err)
				continue
			}
			if string(got) != string(want) {
				t.Errorf("embedded %s differs from the file on disk", f)
			}
		}
	}
}

// loadThroughRoot evaluates a built-in module the way a user's spec does:
// a root spec calls it by its gpuform/ source and, for hardware profiles,
// hands its hardware output to a node, so the loader's hardware checks run.
func loadThroughRoot(t *testing.T, dir, inputs string) (*spec.Config, hcl.Diagnostics) {
	t.Helper()
	src := fmt.Sprintf("module \"m\" {\n  source = \"gpuform/%s\"\n%s}\n", dir, inputs)
	if !isStack(dir) {
		src += "node \"n\" {\n  hosts    = [\"gpu001.example.com\"]\n  hardware = module.m.hardware\n}\n"
	}
	return spec.LoadFiles(map[string][]byte{"root.gpuform.hcl": []byte(src)}, spec.LoadOptions{BuiltinModules: modules.FS()})
}

func TestModulesLoad(t *testing.T) {
	for _, dir := range moduleDirs(t) {
		t.Run(dir, func(t *testing.T) {
			cfg, diags := loadThroughRoot(t, dir, "")
			for _, d := range diags {
				t.Errorf("%s", d.Error())
			}
			mc := cfg.Modules["m"]
			if mc == nil {
				t.Fatal("module call not recorded")
			}
			if isStack(dir) {
				for _, want := range []string{"driver_version", "kernel_module", "cuda_version", "nccl_version", "dcgm_version", "container_toolkit_version", "pytorch_image"} {
					v, ok := mc.Outputs[want]
					if !ok || !v.IsKnown() || v.IsNull() {
						t.Errorf("stack module has no known output %q", want)
					}
				}
				return
			}
			if len(cfg.Nodes) != 1 || cfg.Nodes[0].Hardware == nil {
				t.Fatal("hardware output did not decode into the node")
			}
			checkHardware(t, cfg.Nodes[0].Hardware)
			checkNUMABindsOutput(t, mc.Outputs, cfg.Nodes[0].Hardware)
		})
	}
}

// checkHardware asserts the facts every profile must get right, beyond what
// the loader checks: one entry per GPU index 0..n-1, every GPU in exactly one
// existing NUMA node, unique PCI addresses, interconnect consistent with the
// NVLink domain. (TestHardwareModelsAreKnownToLint checks the model name.)
func checkHardware(t *testing.T, hw *spec.Hardware) {
	t.Helper()
	if hw.GPUCount != len(hw.GPUs) {
		t.Errorf("gpu_count %d but %d GPUs described", hw.GPUCount, len(hw.GPUs))
	}
	for i, g := range hw.GPUs {
		if g.Index != i {
			t.Errorf("gpus[%d] has index %d; list GPUs in index order from 0", i, g.Index)
		}
		if g.NUMA < 0 || g.NUMA >= hw.NUMANodes {
			t.Errorf("GPU %d on NUMA node %d of %d", g.Index, g.NUMA, hw.NUMANodes)
		}
	}
	pcis := map[string]string{}
	for _, g := range hw.GPUs {
		if g.PCI == "" {
			continue
		}
		if prev, dup := pcis[g.PCI]; dup {
			t.Errorf("PCI address %s used by GPU %d and %s", g.PCI, g.Index, prev)
		}
		pcis[g.PCI] = fmt.Sprintf("GPU %d", g.Index)
	}
	for _, n := range hw.NICs {
		if n.PCI == "" {
			continue
		}
		if prev, dup := pcis[n.PCI]; dup {
			t.Errorf("PCI address %s used by NIC %s and %s", n.PCI, n.Name, prev)
		}
		pcis[n.PCI] = "NIC " + n.Name
		if n.SpeedGbps <= 0 {
			t.Errorf("NIC %s has no link speed", n.Name)
		}
	}
	switch hw.Interconnect {
	case "nvswitch":
		// A rack-scale tray (GB200/GB300 NVL72) shares its NVLink domain
		// with the rack's other trays: the domain is whole trays.
		if hw.NVLinkDomain != hw.GPUCount && (hw.NVLinkDomain < hw.GPUCount || hw.NVLinkDomain%hw.GPUCount != 0) {
			t.Errorf("NVSwitch board with nvlink_domain %d of %d GPUs", hw.NVLinkDomain, hw.GPUCount)
		}
	case "pcie", "nvlink_c2c":
		if hw.NVLinkDomain != 1 {
			t.Errorf("%s system with nvlink_domain %d; no GPU peer is reachable over NVLink", hw.Interconnect, hw.NVLinkDomain)
		}
	case "nvlink_bridge":
		if hw.NVLinkDomain < 2 || hw.NVLinkDomain >= hw.GPUCount {
			t.Errorf("NVLink-bridge system with nvlink_domain %d of %d GPUs", hw.NVLinkDomain, hw.GPUCount)
		}
	}
	// A GPU and a NIC under one named switch must be on the same NUMA node:
	// a PCIe switch hangs off one root port of one socket.
	switchNUMA := map[string]int{}
	place := func(sw string, numa int, what string) {
		if sw == "" {
			return
		}
		if prev, ok := switchNUMA[sw]; ok && prev != numa {
			t.Errorf("%s under switch %s on NUMA %d, but the switch is on NUMA %d", what, sw, numa, prev)
		}
		switchNUMA[sw] = numa
	}
	for _, g := range hw.GPUs {
		place(g.Switch, g.NUMA, fmt.Sprintf("GPU %d", g.Index))
	}
	for _, n := range hw.NICs {
		place(n.Switch, n.NUMA, "NIC "+n.Name)
	}
}

// checkNUMABindsOutput verifies the numa_binds convenience output: it must put
// each GPU on the NUMA node the hardware object says, exactly once.
func checkNUMABindsOutput(t *testing.T, outs map[string]cty.Value, hw *spec.Hardware) {
	t.Helper()
	v, ok := outs["numa_binds"]
	if !ok {
		t.Error("hardware profile has no numa_binds output")
		return
	}
	seen := map[int]int{}
	for _, b := range v.AsValueSlice() {
		node, _ := b.GetAttr("node").AsBigFloat().Int64()
		for _, g := range b.GetAttr("gpus").AsValueSlice() {
			idx, _ := g.AsBigFloat().Int64()
			seen[int(idx)]++
			gpu, ok := hw.GPU(int(idx))
			if !ok {
				t.Errorf("numa_binds names GPU %d, which the hardware lacks", idx)
				continue
			}
			if gpu.NUMA != int(node) {
				t.Errorf("numa_binds puts GPU %d on node %d, hardware says %d", idx, node, gpu.NUMA)
			}
		}
	}
	for _, g := range hw.GPUs {
		if seen[g.Index] != 1 {
			t.Errorf("numa_binds lists GPU %d %d times", g.Index, seen[g.Index])
		}
	}
}

// TestModuleInputs exercises each input variable: a valid value loads and
// changes the output, an invalid one is refused by the module's validation.
func TestModuleInputs(t *testing.T) {
	tests := []struct {
		name, dir, inputs string
		wantErr           string
		check             func(t *testing.T, hw *spec.Hardware)
	}{
		{
			name: "hgx roce 200G", dir: "hgx-h100-8gpu", inputs: "  nic_link = \"roce\"\n  nic_speed_gbps = 200\n",
			check: func(t *testing.T, hw *spec.Hardware) {
				for _, n := range hw.NICs {
					if n.Link != "roce" || n.SpeedGbps != 200 {
						t.Errorf("NIC %s: link %s speed %d, want roce 200", n.Name, n.Link, n.SpeedGbps)
					}
				}
			},
		},
		// 100G is not a speed a DGX H100 compute port runs at.
		{name: "hgx bad speed", dir: "hgx-h100-8gpu", inputs: "  nic_speed_gbps = 100\n", wantErr: "200 or 400"},
		{
			name: "dgx a100 40GB", dir: "dgx-a100", inputs: "  gpu_memory_gb = 40\n",
			check: func(t *testing.T, hw *spec.Hardware) {
				if hw.GPUModel != "A100 SXM4 40GB" || hw.Memory.String() != "1TiB" {
					t.Errorf("got %s with %s RAM", hw.GPUModel, hw.Memory)
				}
			},
		},
		{name: "dgx a100 bad memory", dir: "dgx-a100", inputs: "  gpu_memory_gb = 64\n", wantErr: "40 or 80"},
		{name: "l40s bad link", dir: "l40s-8gpu-pcie", inputs: "  nic_link = \"omnipath\"\n", wantErr: "nic_link"},
		{
			name: "gh200 with a NIC", dir: "gh200",
			inputs: "  nics = [{ name = \"mlx5_0\", netdev = \"ibp3s0\", pci = \"0000:03:00.0\", numa = 0, switch = \"\", link = \"infiniband\", speed_gbps = 400, rdma = true }]\n",
			check: func(t *testing.T, hw *spec.Hardware) {
				if len(hw.NICs) != 1 || !hw.HasRDMA() {
					t.Errorf("NICs %+v, want the one RDMA NIC passed in", hw.NICs)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, diags := loadThroughRoot(t, tt.dir, tt.inputs)
			if tt.wantErr != "" {
				if !diags.HasErrors() || !strings.Contains(diags.Error(), tt.wantErr) {
					t.Fatalf("want an error mentioning %q, got %v", tt.wantErr, diags)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			tt.check(t, cfg.Nodes[0].Hardware)
		})
	}
}

// TestModulesHaveSources checks that every module names where its facts come
// from: a URL in its comments.
func TestModulesHaveSources(t *testing.T) {
	for _, dir := range moduleDirs(t) {
		t.Run(dir, func(t *testing.T) {
			files, _ := filepath.Glob(filepath.Join(dir, "*.gpuform.hcl"))
			found := false
			for _, f := range files {
				src, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(src), "https://") {
					found = true
				}
			}
			if !found {
				t.Errorf("module %s cites no public source (no https:// URL in its comments)", dir)
			}
		})
	}
}

// TestReadmeListsEveryModule keeps modules/README.md in step with the folders.
func TestReadmeListsEveryModule(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range moduleDirs(t) {
		if !strings.Contains(string(readme), "gpuform/"+dir) {
			t.Errorf("README.md does not document gpuform/%s", dir)
		}
	}
}

// TestModulesAreFormatted keeps every module in canonical HCL form, so
// `gpuform fmt -check` passes on a copied module.
func TestModulesAreFormatted(t *testing.T) {
	for _, dir := range moduleDirs(t) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.gpuform.hcl"))
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := hclwrite.Format(src); string(got) != string(src) {
				t.Errorf("%s is not in canonical HCL format (run gpuform fmt)", f)
			}
		}
	}
}

// TestStackBaselinesAreCompatible checks every stack baseline against the
// compatibility knowledge base lint uses (the reference tables embedded in
// kb): the driver runs the CUDA toolkit, its branch is supported,
// NCCL has a build for that CUDA, the toolkit is a known release, and the
// container image carries the same CUDA and NCCL and accepts the driver.
func TestStackBaselinesAreCompatible(t *testing.T) {
	kbase, err := kb.Load()
	if err != nil {
		t.Fatal(err)
	}
	// A fixed instant keeps end-of-life checks from changing with the calendar.
	asOf := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for _, dir := range moduleDirs(t) {
		if !isStack(dir) {
			continue
		}
		t.Run(dir, func(t *testing.T) {
			cfg, diags := loadThroughRoot(t, dir, "")
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			out := func(name string) string { return cfg.Modules["m"].Outputs[name].AsString() }
			mustV := func(parse func(string) (kb.Version, error), s string) kb.Version {
				v, err := parse(s)
				if err != nil {
					t.Fatalf("%s: %v", s, err)
				}
				return v
			}
			driver := mustV(kb.ParseDriverVersion, out("driver_version"))
			cuda := mustV(kb.ParseVersion, out("cuda_version"))
			nccl := mustV(kb.ParseVersion, out("nccl_version"))
			toolkit := mustV(kb.ParseVersion, out("container_toolkit_version"))

			if min, ok := kbase.CUDAMinDriver(cuda); !ok || min.Check(driver) != kb.Yes {
				t.Errorf("CUDA %s needs driver %v; %s does not meet it (known: %v)", cuda, min.Driver, driver, ok)
			}
			if b, ok := kbase.DriverBranch(driver); !ok {
				t.Errorf("driver branch of %s is not in the knowledge base", driver)
			} else if eol, _ := b.IsEOL(asOf); eol != kb.No {
				t.Errorf("driver branch of %s is end of life (or unknown) as of %s", driver, asOf.Format("2006-01-02"))
			}
			if a, ok := kbase.NCCLBuildFor(nccl, cuda); !ok || a.Available != kb.Yes {
				t.Errorf("no NCCL %s build for CUDA %s in the knowledge base", nccl, cuda)
			}
			if _, ok := kbase.ContainerToolkit(toolkit); !ok {
				t.Errorf("container toolkit %s is not a known release", toolkit)
			}
			img, ok := kbase.NGCImage(out("pytorch_image"))
			if !ok {
				t.Fatalf("image %s is not in the NGC table", out("pytorch_image"))
			}
			if img.CUDA.Truncate(3).Compare(cuda) != 0 || img.NCCL.Compare(nccl) != 0 {
				t.Errorf("image %s carries CUDA %s / NCCL %s, the host stack pins %s / %s", img.Image, img.CUDA, img.NCCL, cuda, nccl)
			}
			if ok, _ := img.DriverCheck(driver, true); ok == kb.No {
				t.Errorf("image %s refuses driver %s", img.Image, driver)
			}
		})
	}
}

// TestHardwareModelsAreKnownToLint resolves every profile's gpu_model through
// lint's knowledge base, so model-specific rules can look the board up.
func TestHardwareModelsAreKnownToLint(t *testing.T) {
	kbase, err := kb.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range moduleDirs(t) {
		if isStack(dir) {
			continue
		}
		cfg, diags := loadThroughRoot(t, dir, "")
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		model := cfg.Nodes[0].Hardware.GPUModel
		if _, ok := kbase.GPU(model); !ok {
			t.Errorf("%s: gpu_model %q does not resolve to exactly one model of kb", dir, model)
		}
	}
}
