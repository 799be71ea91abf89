package resource

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/bind"
	"github.com/gpuform/gpuform/provision/facts"
)

const bindBody = `numa {
  bind {
    gpus = [0]
    node = 0
  }
  bind {
    gpus = [1]
    node = 1
  }
}
affinity {
  gpu_nic = { 0 = "mlx5_0", 1 = "mlx5_1" }
}`

func TestBinding(t *testing.T) {
	f := debianNode()
	f.NUMA = []facts.NUMANode{{ID: 0, CPUs: "0-3"}, {ID: 1, CPUs: "4-7"}}
	got, _ := diffAll(t, loadNode(t, bindBody), f)
	c := got[Binding]
	if c.Action != Create || c.After["gpu.1"] != StringVal("numa 1 (4-7), nic mlx5_1") || len(c.Steps) != 1 || c.Steps[0].Input == "" {
		t.Fatalf("binding: %+v", c)
	}
	written, err := bind.Parse([]byte(c.Steps[0].Input))
	if err != nil || len(written.GPUs) != 2 || written.GPUs[1].CPUs != "4-7" {
		t.Fatalf("written binding %+v: %v\n%s", written, err, c.Steps[0].Input)
	}
	// Recorded: nothing to do.
	f.ManagedFiles = map[string]facts.File{bind.File: facts.NewFile(c.Steps[0].Input)}
	got, _ = diffAll(t, loadNode(t, bindBody), f)
	if c := got[Binding]; c.Action != NoOp {
		t.Errorf("recorded binding: %+v", c)
	}
	// The host's CPUs moved (another BIOS NUMA setting): rewritten.
	f.NUMA[1].CPUs = "4-5"
	got, _ = diffAll(t, loadNode(t, bindBody), f)
	if c := got[Binding]; c.Action != Update || c.Before["gpu.1"] != StringVal("numa 1 (4-7), nic mlx5_1") || c.After["gpu.1"] != StringVal("numa 1 (4-5), nic mlx5_1") {
		t.Errorf("changed CPUs: %+v", c)
	}
	// The spec no longer binds: the file goes.
	got, _ = diffAll(t, loadNode(t, `cpu_governor = "performance"`), f)
	if c := got[Binding]; c.Action != Delete {
		t.Errorf("binding no longer wanted: %+v", c)
	}
	// A NUMA node the host lacks: nothing written, a warning says why.
	f.NUMA = f.NUMA[:1]
	got, warnings := diffAll(t, loadNode(t, bindBody), f)
	if _, ok := got[Binding]; ok || !strings.Contains(strings.Join(warnings, "\n"), "/etc/gpuform/binding.json not recorded: GPU 1 is bound to NUMA node 1, which this host does not have") {
		t.Errorf("missing NUMA node: %+v, warnings %q", got[Binding], warnings)
	}
}
