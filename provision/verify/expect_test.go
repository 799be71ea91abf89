package verify

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

func TestExpectationFor(t *testing.T) {
	src := `
module "hgx" { source = "gpuform/hgx-h100-8gpu" }
node "n" {
  hosts    = ["gpu1"]
  hardware = module.hgx.hardware
  driver {
    version          = "580"
    persistence_mode = true
    peermem          = true
  }
  numa {
    bind {
      gpus = [0, 1]
      node = 0
    }
  }
  affinity { gpu_nic = { 0 = "mlx5_0" } }
  verify {
    optional = ["dcgm"]
    nvml {
      ecc          = true
      min_pcie_gen = 5
    }
    nccl_test "local" {
      command        = "all_reduce_perf -b 8 -e 8G -g 8"
      min_busbw_gbps = 400
      timeout        = "5m"
    }
    nccl_test "fleet" { command = "mpirun -np 16 all_reduce_perf -b 8 -e 8G" }
  }
}`
	cfg, diags := spec.LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(src)}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	lock := &spec.Lock{Nodes: map[string]map[spec.Component]spec.Attr[spec.Version]{"n": {"driver": {V: mustVersion(t, "580.95.05")}}}}
	if e := ExpectationFor(cfg.Nodes[0]); e.DriverVersion != "" {
		t.Errorf("a floating driver without a lock pin is checked as %q", e.DriverVersion)
	}
	if d := spec.ApplyLock(cfg, lock); d.HasErrors() {
		t.Fatal(d.Error())
	}
	got := ExpectationFor(cfg.Nodes[0])
	tr := true
	want := Expectation{
		GPUCount: 8, GPUModel: "H100", Interconnect: InterconnectNVSwitch,
		// A branch in the spec is checked against the lock file's release.
		DriverVersion:   "580.95.05",
		PersistenceMode: &tr, ECC: &tr, MinPCIeGen: 5,
		// NVSwitch hardware implies all NVLinks up and fabric manager running.
		NVLink: NVLinkAllActive, FabricManager: &tr, Peermem: &tr,
		NUMANode: map[int]int{0: 0, 1: 0},
		NIC:      map[int]NICExpectation{0: {NIC: "mlx5_0"}},
		// The hardware module's GPU addresses (modules/hgx-h100-8gpu).
		GPUBusID: map[int]string{0: "0000:1b:00.0", 1: "0000:43:00.0", 2: "0000:52:00.0", 3: "0000:61:00.0",
			4: "0000:9d:00.0", 5: "0000:c3:00.0", 6: "0000:d1:00.0", 7: "0000:df:00.0"},
		NCCL: []NCCLExpectation{
			{Name: "local", Command: "all_reduce_perf -b 8 -e 8G -g 8", MinBusBWGBps: 400, Timeout: 5 * 60e9, Network: "ib_ndr"},
			{Name: "fleet", Command: "mpirun -np 16 all_reduce_perf -b 8 -e 8G", MultiNode: true, Network: "ib_ndr"},
		},
		// dcgm may be missing; nccl-tests may not. The spec has no dcgm
		// block, which alone would make dcgm optional too.
		DCGMOptional: true, DCGMNotInstalled: true,
		// The spec.* checks compare the node block's resources.
		Spec: cfg.Nodes[0],
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func mustVersion(t *testing.T, s string) spec.Version {
	t.Helper()
	v, err := spec.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestExpectationDriverRevision: a driver pinned with its package revision
// is checked against the upstream release NVML reports, as plan compares
// it; the full pin failed every converged node.
func TestExpectationDriverRevision(t *testing.T) {
	src := `
node "n" {
  hosts = ["gpu1"]
  driver { version = "550.127.08-0ubuntu1" }
}`
	cfg, diags := spec.LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(src)}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if got := ExpectationFor(cfg.Nodes[0]).DriverVersion; got != "550.127.08" {
		t.Errorf("DriverVersion = %q, want 550.127.08", got)
	}
}
