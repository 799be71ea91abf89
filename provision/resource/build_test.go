package resource

import (
	"os"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// everyResource is a node block that asks for every resource type.
const everyResource = `driver {
  version = "550.127.08"
  persistence_mode = true
  fabric_manager = true
  peermem = true
  imex = true
}
nvlink_domain "rack1" {}
cuda { version = "12.4.1" }
nccl { version = "2.21.5" }
dcgm { version = "3.3.6" }
container {
  runtime = "docker"
  nvidia_container_toolkit = "1.16.2"
  default_shm_size = "16GiB"
  ulimits = { memlock = "unlimited", stack = "64MiB" }
  images = ["nvcr.io/nvidia/pytorch:25.02-py3@sha256:4f1ca7b1e2c4f0d3e1a7b9c5d2e6f8a0b3c5d7e9f1a2b4c6d8e0f2a4b6c8d0e2"]
  cdi = true
}
shm { size = "50%"}
hugepages {
  size = "2MiB"
  count = 1024
}
affinity {
  nccl_ib_hca = ["mlx5_0"]
  nccl_env = true
  nic_irq_affinity = true
  mtu = { mlx5_0 = 4092 }
}
slurm {
  gres = true
  gres_autodetect = "nvml"
}
cpu_governor = "performance"
sysctl = { "vm.swappiness" = "1" }
kernel_args = ["iommu=pt"]
bench { tools = ["perftest", "fio"] }`

// TestBuildersTable checks the resource table: each resource type is
// declared in the res_<name>.go file named after it, builds only resources
// of its own name, and every resource Build plans comes from one entry.
func TestBuildersTable(t *testing.T) {
	n, f := loadNode(t, everyResource), debianNode()
	// irqbalance is planned only where it is installed.
	f.Units = map[string]facts.UnitState{"irqbalance.service": {Enabled: "enabled", Active: "active"}}
	// IMEX's peers are the host's domain's; its channel needs the
	// driver's device major.
	f.Host = "sim://x"
	f.ConfigFiles = map[string]facts.ConfigFile{"/proc/devices": {Exists: true, Data: []byte("Character devices:\n234 nvidia-caps-imex-channels\n")}}
	in := newBuildInput(testKB, n, f)
	// A node runs Docker, containerd or enroot: containerd_config is asked
	// for by the same spec on containerd, in place of docker_daemon.
	onContainerd := newBuildInput(testKB, loadNode(t, strings.Replace(everyResource, `runtime = "docker"`, `runtime = "containerd"`, 1)), f)
	// pyxis is enroot's, for Slurm.
	onEnroot := newBuildInput(testKB, loadNode(t, strings.NewReplacer(`runtime = "docker"`, `runtime = "enroot"`+"\n  pyxis = true\n  enroot_version = \"4.1.2\"\n  pyxis_version = \"0.24.0\"", `default_shm_size = "16GiB"`, "", `ulimits = { memlock = "unlimited", stack = "64MiB" }`, "").Replace(everyResource)), f)
	// apptainer.conf's directives and Apptainer's package are Apptainer's.
	onApptainer := newBuildInput(testKB, loadNode(t, strings.NewReplacer(`runtime = "docker"`, `runtime = "apptainer"`+"\n  apptainer_always_use_nv = true\n  apptainer_version = \"1.4.5\"", `default_shm_size = "16GiB"`, "", `ulimits = { memlock = "unlimited", stack = "64MiB" }`, "").Replace(everyResource)), f)
	// Without a package to install, the directives are set at once (with
	// one, they wait for the package's own file: TestApptainerConfWaitsForPackage).
	onApptainerConf := newBuildInput(testKB, loadNode(t, strings.NewReplacer(`runtime = "docker"`, `runtime = "apptainer"`+"\n  apptainer_always_use_nv = true", `default_shm_size = "16GiB"`, "", `ulimits = { memlock = "unlimited", stack = "64MiB" }`, "").Replace(everyResource)), f)
	seen := map[string]bool{}
	for _, b := range builders() {
		if seen[b.name] {
			t.Errorf("resource %s is registered twice", b.name)
		}
		seen[b.name] = true
		if _, err := os.Stat("res_" + b.name + ".go"); err != nil {
			t.Errorf("resource %s: its home res_%s.go: %v", b.name, b.name, err)
		}
		bin := in
		switch b.name {
		case ContainerdConfig:
			bin = onContainerd
		case PyxisPlugstack, EnrootPackage, PyxisPackage:
			bin = onEnroot
		case ApptainerPackage:
			bin = onApptainer
		case ApptainerConf:
			bin = onApptainerConf
		}
		rs, _, err := b.build(bin)
		if err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		if len(rs) == 0 {
			t.Errorf("%s: the spec asks for it, but it built nothing", b.name)
		}
		for _, r := range rs {
			if r.Name() != b.name {
				t.Errorf("the %s entry built a resource named %s", b.name, r.Name())
			}
		}
	}
	rs, _, err := Build(testKB, n, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if !seen[r.Name()] {
			t.Errorf("Build planned %s, which no table entry declares", r.Name())
		}
	}
	if len(rs) != len(seen)-6 {
		t.Errorf("Build planned %d resources for a Docker spec that asks for all %d types but containerd_config, apptainer_conf and the enroot, pyxis and Apptainer packages and plugstack line", len(rs), len(seen)-6)
	}
}

// TestComponentResourceNames checks every versioned component names, through
// spec.Component.ResourceName, the resource that installs it, and that the
// resource is registered: the component type, not a map here, owns the
// spelling.
func TestComponentResourceNames(t *testing.T) {
	registered := map[string]bool{}
	for _, b := range builders() {
		registered[b.name] = true
	}
	want := map[spec.Component]string{
		spec.ComponentDriver:           DriverPackage,
		spec.ComponentFabricManager:    FabricManager,
		spec.ComponentCUDA:             CUDAToolkit,
		spec.ComponentNCCL:             NCCL,
		spec.ComponentDCGM:             DCGM,
		spec.ComponentContainerToolkit: ContainerToolkit,
		spec.ComponentEnroot:           EnrootPackage,
		spec.ComponentPyxis:            PyxisPackage,
		spec.ComponentApptainer:        ApptainerPackage,
	}
	for _, c := range spec.Components() {
		got := c.ResourceName()
		if got != want[c] {
			t.Errorf("%s.ResourceName() = %q, want %q", c, got, want[c])
		}
		if !registered[got] {
			t.Errorf("%s installs through resource %q, which no builder registers", c, got)
		}
	}
	if len(want) != len(spec.Components()) {
		t.Errorf("the test knows %d components, spec has %d", len(want), len(spec.Components()))
	}
}
