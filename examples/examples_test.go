package examples_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/lint"
	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// exampleDirs lists every example: each directory of this package.
func exampleDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "testdata" {
			dirs = append(dirs, e.Name())
		}
	}
	sort.Strings(dirs)
	return dirs
}

func TestEveryIssueExampleExists(t *testing.T) {
	have := map[string]bool{}
	for _, d := range exampleDirs(t) {
		have[d] = true
	}
	for _, want := range []string{"quickstart", "training-cluster", "inference-pcie", "ci-preflight"} {
		if !have[want] {
			t.Errorf("example %s is missing", want)
		}
	}
}

func load(t *testing.T, dir string) *spec.Config {
	t.Helper()
	cfg, diags := spec.Load(dir, spec.LoadOptions{BuiltinModules: modules.FS()})
	for _, d := range diags {
		// Warnings count too: an example is what users copy.
		t.Errorf("%s", d.Error())
	}
	if cfg == nil {
		t.Fatal("no config")
	}
	return cfg
}

// TestExamplesLoad loads every example with the real loader and checks the
// facts a reviewer would: the spec agrees with its own hardware profile.
func TestExamplesLoad(t *testing.T) {
	for _, dir := range exampleDirs(t) {
		t.Run(dir, func(t *testing.T) {
			cfg := load(t, dir)
			if len(cfg.Nodes) == 0 {
				t.Fatal("example declares no node")
			}
			for _, n := range cfg.Nodes {
				checkNode(t, n)
			}
		})
	}
}

func checkNode(t *testing.T, n *spec.Node) {
	t.Helper()
	if len(n.Hosts) == 0 {
		t.Errorf("node %s has no hosts", n.Name)
	}
	hw := n.Hardware
	if hw == nil {
		t.Fatalf("node %s declares no hardware; every example pins its topology", n.Name)
	}
	if hw.GPUCount != len(hw.GPUs) {
		t.Errorf("node %s: gpu_count %d but %d GPUs", n.Name, hw.GPUCount, len(hw.GPUs))
	}

	// NUMA: every GPU bound exactly once, to the node it sits on.
	if n.NUMA != nil {
		bound := map[int]int{}
		for _, b := range n.NUMA.Binds {
			for _, g := range b.GPUs {
				bound[g.V]++
				gpu, ok := hw.GPU(g.V)
				switch {
				case !ok:
					t.Errorf("node %s: bind names GPU %d, which the hardware lacks", n.Name, g.V)
				case gpu.NUMA != b.Node.V:
					t.Errorf("node %s: GPU %d bound to NUMA %d but sits on NUMA %d", n.Name, g.V, b.Node.V, gpu.NUMA)
				}
			}
		}
		for _, g := range hw.GPUs {
			if bound[g.Index] != 1 {
				t.Errorf("node %s: GPU %d bound %d times", n.Name, g.Index, bound[g.Index])
			}
		}
		if hw.CPUSockets > 1 && n.NUMA.Balancing.V {
			t.Errorf("node %s: NUMA balancing on for a %d-socket box", n.Name, hw.CPUSockets)
		}
	}

	// GPU-NIC pairing: each NIC exists, is RDMA-capable, and is the one
	// under the GPU's own PCIe switch (or at least on its NUMA node).
	if n.Affinity != nil {
		used := map[string]int{}
		for gi, nic := range n.Affinity.GPUNIC {
			gpu, ok := hw.GPU(gi)
			if !ok {
				t.Errorf("node %s: gpu_nic names GPU %d, which the hardware lacks", n.Name, gi)
				continue
			}
			hn, ok := hw.NIC(nic.V)
			if !ok {
				t.Errorf("node %s: gpu_nic names NIC %s, which the hardware lacks", n.Name, nic.V)
				continue
			}
			used[hn.Name]++
			if gpu.Switch != "" && hn.Switch != gpu.Switch {
				t.Errorf("node %s: GPU %d (switch %s) paired with %s (switch %s)", n.Name, gi, gpu.Switch, hn.Name, hn.Switch)
			}
			if hn.NUMA != gpu.NUMA {
				t.Errorf("node %s: GPU %d (NUMA %d) paired with %s on NUMA %d", n.Name, gi, gpu.NUMA, hn.Name, hn.NUMA)
			}
		}
		for name, k := range used {
			if k > 1 && len(used) < len(hw.NICs) {
				t.Errorf("node %s: %s shared by %d GPUs while another NIC is idle", n.Name, name, k)
			}
		}
		for _, h := range n.Affinity.NCCLIBHCA {
			if _, ok := hw.NIC(strings.TrimLeft(strings.SplitN(h.V, ":", 2)[0], "=^")); !ok {
				t.Errorf("node %s: NCCL_IB_HCA entry %s is not a NIC of the hardware", n.Name, h.V)
			}
		}
	}

	if d := n.Driver; d != nil {
		// A rack-scale tray's NVSwitches are in the rack's switch trays:
		// no Fabric Manager on the host (lint's fabric_manager_required).
		rackScale := hw.NVLinkDomain > hw.GPUCount
		if hw.Interconnect == "nvswitch" && !rackScale && !d.FabricManager.V {
			t.Errorf("node %s: NVSwitch hardware without fabric_manager", n.Name)
		}
		if hw.Interconnect != "nvswitch" && d.FabricManager.V {
			t.Errorf("node %s: fabric_manager on hardware without NVSwitch", n.Name)
		}
		if d.Peermem.V {
			if !hw.HasRDMA() {
				t.Errorf("node %s: peermem without RDMA NICs", n.Name)
			}
			if !hasKernelArg(n, "iommu=pt") {
				t.Errorf("node %s: GPUDirect RDMA (peermem) without iommu=pt", n.Name)
			}
		}
		if !d.PersistenceMode.V {
			t.Errorf("node %s: persistence mode off", n.Name)
		}
	}

	if c := n.Container; c != nil {
		if c.DefaultShmSize.Set && c.DefaultShmSize.V.Bytes < 1<<30 {
			t.Errorf("node %s: container default /dev/shm %s is below 1 GiB", n.Name, c.DefaultShmSize.V)
		}
		if hw.HasRDMA() {
			if m, ok := c.Ulimits["memlock"]; !ok || !m.V.Unlimited {
				t.Errorf("node %s: RDMA NICs but container memlock is not unlimited", n.Name)
			}
		}
	}

	if n.TensorParallel.Set && n.TensorParallel.V > hw.NVLinkDomain {
		t.Errorf("node %s: tensor_parallel %d exceeds the NVLink domain of %d", n.Name, n.TensorParallel.V, hw.NVLinkDomain)
	}

	if v := n.Verify; v != nil && v.NVML != nil {
		if v.NVML.GPUs.Set && v.NVML.GPUs.V != hw.GPUCount {
			t.Errorf("node %s: verify expects %d GPUs, hardware has %d", n.Name, v.NVML.GPUs.V, hw.GPUCount)
		}
		wantNVLink := "all_active"
		if hw.NVLinkDomain <= 1 {
			wantNVLink = "none"
		}
		if v.NVML.NVLink.Set && v.NVML.NVLink.V != wantNVLink {
			t.Errorf("node %s: verify nvlink = %q on %s hardware", n.Name, v.NVML.NVLink.V, hw.Interconnect)
		}
	}
}

func hasKernelArg(n *spec.Node, arg string) bool {
	for _, a := range n.KernelArgs {
		if a.V == arg {
			return true
		}
	}
	return false
}

// TestExamplesAreFormatted keeps every example in canonical form, so that
// `gpuform fmt -check examples/...` passes and users copy tidy files.
func TestExamplesAreFormatted(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("*", "*.hcl"))
	if len(files) == 0 {
		t.Fatal("no example files")
	}
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

// TestExamplesHaveReadme checks each example says what it shows and how to run it.
func TestExamplesHaveReadme(t *testing.T) {
	for _, dir := range exampleDirs(t) {
		b, err := os.ReadFile(filepath.Join(dir, "README.md"))
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		if !strings.Contains(string(b), "gpuform ") || !strings.Contains(string(b), "examples/"+dir) {
			t.Errorf("%s/README.md shows no gpuform command for examples/%s", dir, dir)
		}
	}
}

// TestExampleVariables runs the overrides the READMEs show and checks that
// they reach the node, and that the examples' validations refuse bad values.
func TestExampleVariables(t *testing.T) {
	tests := []struct {
		name    string
		dir     string
		vars    []string
		environ []string
		wantErr string
		check   func(t *testing.T, n *spec.Node)
	}{
		{
			name: "training defaults", dir: "training-cluster",
			check: func(t *testing.T, n *spec.Node) {
				if len(n.Hosts) != 32 || n.Hosts[0].Name != "gpu001.dc1.example.com" || n.Hosts[31].Name != "gpu032.dc1.example.com" {
					t.Errorf("want gpu001..gpu032, got %d hosts", len(n.Hosts))
				}
				h := n.Hosts[0]
				if h.User != "ops" || h.Jump != "bastion.dc1.example.com" || h.Become != "sudo" {
					t.Errorf("connection settings not inherited from the inventory: %+v", h)
				}
				if n.Rollout.Batch.V != 4 || n.Verify.NCCLTests[0].MinBusBWGbps.V != 460 {
					t.Errorf("batch %d floor %v", n.Rollout.Batch.V, n.Verify.NCCLTests[0].MinBusBWGbps.V)
				}
			},
		},
		{
			name: "training override", dir: "training-cluster",
			vars:    []string{`hosts=["gpu[001-004].dc2.example.com"]`, "rollout_batch=2"},
			environ: []string{"GPUFORM_VAR_allreduce_floor_gbps=430"},
			check: func(t *testing.T, n *spec.Node) {
				if len(n.Hosts) != 4 || n.Rollout.Batch.V != 2 || n.Verify.NCCLTests[0].MinBusBWGbps.V != 430 {
					t.Errorf("hosts %d batch %d floor %v", len(n.Hosts), n.Rollout.Batch.V, n.Verify.NCCLTests[0].MinBusBWGbps.V)
				}
			},
		},
		// Draining 9 of 32 nodes at once is refused by the example's validation.
		{name: "training batch too large", dir: "training-cluster", vars: []string{"rollout_batch=9"}, wantErr: "between 1 and 8"},
		{
			name: "inference on the simulated node", dir: "inference-pcie",
			vars: []string{`hosts=["sim://l40s-rocky9"]`, "shm_per_gpu_gib=4"},
			check: func(t *testing.T, n *spec.Node) {
				if len(n.Hosts) != 1 || n.Hosts[0].Name != "sim://l40s-rocky9" {
					t.Errorf("hosts %+v", n.Hosts)
				}
				if got := n.Container.DefaultShmSize.V.String(); got != "32GiB" {
					t.Errorf("default shm %s, want 32GiB (8 GPUs x 4 GiB)", got)
				}
			},
		},
		{name: "inference shm too small", dir: "inference-pcie", vars: []string{"shm_per_gpu_gib=0"}, wantErr: "at least 1 GiB"},
		{
			name: "preflight hosts from the scheduler", dir: "ci-preflight",
			vars: []string{`hosts=["gpu007","gpu008"]`},
			check: func(t *testing.T, n *spec.Node) {
				if len(n.Hosts) != 2 || n.Hosts[0].User != "ci" {
					t.Errorf("hosts %+v", n.Hosts)
				}
				if n.Driver != nil || n.Container != nil || n.Rollout != nil {
					t.Error("the preflight node must only verify")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := spec.LoadOptions{BuiltinModules: modules.FS(), Environ: tt.environ}
			for _, v := range tt.vars {
				opts.VarArgs = append(opts.VarArgs, spec.VarArg{Value: v})
			}
			cfg, diags := spec.Load(tt.dir, opts)
			if tt.wantErr != "" {
				if !diags.HasErrors() || !strings.Contains(diags.Error(), tt.wantErr) {
					t.Fatalf("want an error mentioning %q, got %v", tt.wantErr, diags)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			if len(cfg.Nodes) != 1 {
				t.Fatalf("%d nodes", len(cfg.Nodes))
			}
			tt.check(t, cfg.Nodes[0])
		})
	}
}

// TestExamplesLint runs every lint rule over every example: what users copy
// must not carry an error-level finding. Warnings are logged, not failed,
// because they may rest on unconfirmed knowledge-base rows.
func TestExamplesLint(t *testing.T) {
	kbase, err := kb.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range exampleDirs(t) {
		t.Run(dir, func(t *testing.T) {
			cfg := load(t, dir)
			// A fixed instant keeps end-of-life findings from changing with the calendar.
			res, diags := lint.Run(cfg, lint.Options{KB: kbase, Now: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)})
			for _, d := range diags {
				t.Errorf("lint: %s", d.Error())
			}
			for _, f := range res.Findings {
				msg := fmt.Sprintf("%s:%d:%d: %s %s: %s", f.Range.Filename, f.Range.Start.Line, f.Range.Start.Column, f.Severity, f.Rule, f.Summary)
				if f.Severity >= lint.Error {
					t.Error(msg)
				} else {
					t.Log(msg)
				}
			}
		})
	}
}

// TestTrainingClusterOutput checks the output job scripts copy agrees with
// the HCAs the node block pins.
func TestTrainingClusterOutput(t *testing.T) {
	cfg := load(t, "training-cluster")
	o, ok := cfg.Outputs["nccl_ib_hca"]
	if !ok {
		t.Fatal("no nccl_ib_hca output")
	}
	var hcas []string
	for _, h := range cfg.Nodes[0].Affinity.NCCLIBHCA {
		hcas = append(hcas, h.V)
	}
	if got, want := o.Value.AsString(), strings.Join(hcas, ","); got != want {
		t.Errorf("output %q, node pins %q", got, want)
	}
}
