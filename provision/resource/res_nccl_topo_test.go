package resource

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nccltopo"
	"github.com/gpuform/gpuform/spec"
)

// topoVM is a two-GPU VM with a flattened PCI tree (every device on its
// own virtual root port) and the node that describes its real layout:
// GPU i and NIC i under one switch.
func topoVM(t *testing.T, body string) (*spec.Node, *facts.Node) {
	t.Helper()
	n := loadNode(t, body)
	n.Hardware = &spec.Hardware{
		GPUs: []spec.HardwareGPU{{Index: 0, PCI: "0001:00:00.0", NUMA: 0, Switch: "a"}, {Index: 1, PCI: "0002:00:00.0", NUMA: 1, Switch: "b"}},
		NICs: []spec.HardwareNIC{{Name: "mlx5_0", PCI: "0101:00:00.0", NUMA: 0, Switch: "a", Link: "infiniband", RDMA: true},
			{Name: "mlx5_1", PCI: "0102:00:00.0", NUMA: 1, Switch: "b", Link: "infiniband", RDMA: true}},
	}
	f := debianNode()
	f.Arch, f.Hypervisor = "x86_64", "microsoft"
	f.CPU = facts.CPU{Vendor: "AuthenticAMD"}
	f.NUMA = []facts.NUMANode{{ID: 0, CPUs: "0-3"}, {ID: 1, CPUs: "4-7"}}
	f.PCI = []facts.PCIDevice{
		{Address: "0001:00:00.0", Kind: facts.KindGPU, Class: "0x030200"}, {Address: "0002:00:00.0", Kind: facts.KindGPU, Class: "0x030200"},
		{Address: "0101:00:00.0", Kind: facts.KindInfiniBand, Class: "0x020700", RDMADevs: []string{"mlx5_0"}},
		{Address: "0102:00:00.0", Kind: facts.KindInfiniBand, Class: "0x020700", RDMADevs: []string{"mlx5_1"}},
	}
	return n, f
}

func TestNCCLTopo(t *testing.T) {
	const asked = `affinity {
  gpu_nic        = { 0 = "mlx5_0", 1 = "mlx5_1" }
  nccl_topo_file = true
}`
	n, f := topoVM(t, asked)
	got, warnings := diffAll(t, n, f)
	topo, conf := got[NCCLTopo], got[NCCLConf]
	if topo.Action != Create || len(topo.Steps) != 1 || !strings.Contains(topo.Steps[0].Input, `<pci busid="0001:00:00.0" class="0x030200"`) {
		t.Fatalf("nccl_topo on a flattened VM: %+v (warnings %q)", topo, warnings)
	}
	// Without nccl_env, nccl.conf gets the topology key alone.
	if conf.Action != Create || conf.After["NCCL_TOPO_FILE"] != StringVal(nccltopo.File) || conf.After["NCCL_IB_HCA"] != StringVal("") {
		t.Errorf("nccl_conf: %+v", conf)
	}
	// Written: nothing to do.
	f.ManagedFiles = map[string]facts.File{nccltopo.File: facts.NewFile(topo.Steps[0].Input)}
	f.NCCLConf = &facts.File{Content: "NCCL_TOPO_FILE=" + nccltopo.File + "\n"}
	got, _ = diffAll(t, n, f)
	if got[NCCLTopo].Action != NoOp || got[NCCLConf].Action != NoOp {
		t.Errorf("converged: %s %s", got[NCCLTopo].Action, got[NCCLConf].Action)
	}

	// The same spec on bare metal: never written, and the written file
	// goes; plan says why.
	f.Hypervisor = ""
	got, warnings = diffAll(t, n, f)
	if got[NCCLTopo].Action != Delete || !strings.Contains(strings.Join(warnings, "\n"), nccltopo.File+" not written: this host is not a virtual machine") {
		t.Errorf("bare metal: %+v, warnings %q", got[NCCLTopo], warnings)
	}
	// nccl.conf held only gpuform's NCCL_TOPO_FILE: it goes with the file
	// it points at.
	if c := got[NCCLConf]; c.Action != Delete || c.Before["NCCL_TOPO_FILE"] != StringVal(nccltopo.File) {
		t.Errorf("bare metal without nccl_env: nccl.conf: %+v", c)
	}
	// The operator's lines stay; only gpuform's key goes.
	f.NCCLConf = &facts.File{Content: "NCCL_DEBUG=WARN\nNCCL_TOPO_FILE=" + nccltopo.File + "\n"}
	f.ConfigFiles = map[string]facts.ConfigFile{NCCLConfFile: {Exists: true, Data: []byte(f.NCCLConf.Content), SHA256: facts.NewFile(f.NCCLConf.Content).SHA256, Mode: "-rw-r--r--", UID: "0", GID: "0"}}
	got, _ = diffAll(t, n, f)
	if c := got[NCCLConf]; c.Action != Update || c.Before["NCCL_TOPO_FILE"] != StringVal(nccltopo.File) || len(c.After) != 0 ||
		len(c.Steps) != 1 || !strings.Contains(c.Steps[0].Input, "NCCL_DEBUG=WARN\n") || strings.Contains(c.Steps[0].Input, "NCCL_TOPO_FILE") {
		t.Errorf("bare metal, operator's nccl.conf: %+v", c)
	}
	// An NCCL_TOPO_FILE of the operator's own is not gpuform's to remove.
	f.NCCLConf = &facts.File{Content: "NCCL_TOPO_FILE=/opt/site/topo.xml\n"}
	got, _ = diffAll(t, n, f)
	if c, ok := got[NCCLConf]; ok {
		t.Errorf("operator's NCCL_TOPO_FILE: nccl.conf planned: %+v", c)
	}

	// Not asked for: no warning, nothing written.
	n, f = topoVM(t, `affinity {
  gpu_nic  = { 0 = "mlx5_0", 1 = "mlx5_1" }
  nccl_env = true
}`)
	got, warnings = diffAll(t, n, f)
	if got[NCCLTopo].Action != NoOp || got[NCCLConf].After["NCCL_TOPO_FILE"] != StringVal("") || strings.Contains(strings.Join(warnings, "\n"), nccltopo.File) {
		t.Errorf("not asked: %+v %+v %q", got[NCCLTopo], got[NCCLConf], warnings)
	}
}
