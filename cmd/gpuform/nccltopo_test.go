package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/nccltopo"
)

// topoSpec describes the simulated L40S server's GPUs and RoCE NICs at
// the addresses its root shows, grouped as the real machine would pair
// them (a GPU and a NIC per switch), and asks for the topology file.
const topoSpec = `
node "vm" {
  hosts = ["sim://l40s-rocky9"]
  hardware = {
    gpu_model = "L40S", gpu_count = 8, interconnect = "pcie", cpu_sockets = 2, numa_nodes = 2
    gpus = [
      { index = 0, pci = "0000:01:00.0", numa = 0, switch = "a" },
      { index = 1, pci = "0000:25:00.0", numa = 0, switch = "a" },
      { index = 2, pci = "0000:41:00.0", numa = 0, switch = "b" },
      { index = 3, pci = "0000:65:00.0", numa = 0, switch = "b" },
      { index = 4, pci = "0000:85:00.0", numa = 1, switch = "c" },
      { index = 5, pci = "0000:a5:00.0", numa = 1, switch = "c" },
      { index = 6, pci = "0000:c1:00.0", numa = 1, switch = "d" },
      { index = 7, pci = "0000:e1:00.0", numa = 1, switch = "d" },
    ]
    nics = [
      { name = "mlx5_0", pci = "0000:21:00.0", numa = 0, switch = "a", link = "roce", rdma = true },
      { name = "mlx5_1", pci = "0000:21:00.1", numa = 0, switch = "b", link = "roce", rdma = true },
      { name = "mlx5_2", pci = "0000:81:00.0", numa = 1, switch = "c", link = "roce", rdma = true },
      { name = "mlx5_3", pci = "0000:81:00.1", numa = 1, switch = "d", link = "roce", rdma = true },
    ]
  }
  affinity {
    nccl_topo_file = true
  }
}
`

// TestNCCLTopoFile: on bare metal plan writes no topology file and says
// why; once the same machine is a VM (a hypervisor's DMI vendor) apply
// writes the file from the hardware description and points
// NCCL_TOPO_FILE at it in nccl.conf, and a second plan has nothing to do.
func TestNCCLTopoFile(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), topoSpec)

	code, out, errOut := runCLIEnv(t, env, "plan", dir)
	if code != ExitOK || !strings.Contains(out+errOut, nccltopo.File+" not written: this host is not a virtual machine") || strings.Contains(out, "nccl_topo") {
		t.Fatalf("bare metal: exit %d\n%s%s", code, out, errOut)
	}

	root := simRoot(t, state, "l40s-rocky9")
	dmi := filepath.Join(root, "sys/class/dmi/id")
	if err := os.MkdirAll(dmi, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dmi, "sys_vendor"), "QEMU\n")
	writeFile(t, filepath.Join(dmi, "product_name"), "Standard PC (Q35 + ICH9, 2009)\n")
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply on the VM: exit %d\n%s%s", code, out, errOut)
	}
	xml, err := os.ReadFile(filepath.Join(root, nccltopo.File))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<cpu numaid="1" affinity="ffffffff,00000000" arch="x86_64" vendor="AuthenticAMD">`,
		`<pci busid="ffff:ff:04.0" class="0x060400" link_speed="32 GT/s" link_width="16">`,
		`<pci busid="0000:e1:00.0" class="0x030200" link_speed="16 GT/s" link_width="16"/>`,
		`<pci busid="0000:81:00.1" class="0x020000" link_speed="32 GT/s" link_width="16"/>`,
	} {
		if !strings.Contains(string(xml), want) {
			t.Errorf("%s lacks %s:\n%s", nccltopo.File, want, xml)
		}
	}
	conf, err := os.ReadFile(filepath.Join(root, "etc/nccl.conf"))
	if err != nil || !strings.Contains(string(conf), "NCCL_TOPO_FILE="+nccltopo.File+"\n") {
		t.Errorf("nccl.conf: %v\n%s", err, conf)
	}
	if code, out, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitOK {
		t.Errorf("plan after apply: exit %d\n%s%s", code, out, errOut)
	}
}

// TestNCCLTopoFileTurnedOff: once nccl_topo_file is turned off, apply
// removes the topology file and the NCCL_TOPO_FILE line gpuform wrote in
// nccl.conf (plan shows it going), leaving the operator's lines as they
// were, byte for byte; a NCCL_TOPO_FILE left behind would point every job
// at a file that no longer exists.
func TestNCCLTopoFileTurnedOff(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := t.TempDir()
	spec := filepath.Join(dir, "main.gpuform.hcl")
	writeFile(t, spec, topoSpec)
	if code, out, errOut := runCLIEnv(t, env, "plan", dir); code != ExitOK {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	root := simRoot(t, state, "l40s-rocky9")
	dmi := filepath.Join(root, "sys/class/dmi/id")
	if err := os.MkdirAll(dmi, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dmi, "sys_vendor"), "QEMU\n")
	// The operator's own nccl.conf: a comment, settings, odd spacing and
	// a blank line.
	const operator = "# site defaults\nNCCL_DEBUG=WARN\n  NCCL_IB_TIMEOUT = 22\n\nNCCL_NET_GDR_LEVEL=PHB\n"
	conf := filepath.Join(root, "etc/nccl.conf")
	writeFile(t, conf, operator)
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply on the VM: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(conf); !strings.Contains(string(b), "NCCL_TOPO_FILE="+nccltopo.File+"\n") {
		t.Fatalf("nccl.conf after the first apply:\n%s", b)
	}

	writeFile(t, spec, strings.Replace(topoSpec, "nccl_topo_file = true", "nccl_topo_file = false", 1))
	code, out, errOut := runCLIEnv(t, env, "plan", "-no-color", dir)
	if code != ExitOK || !strings.Contains(out, "nccl_conf") || !strings.Contains(out, `- NCCL_TOPO_FILE`) {
		t.Fatalf("plan after turning it off: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply after turning it off: exit %d\n%s%s", code, out, errOut)
	}
	if b, err := os.ReadFile(conf); err != nil || string(b) != operator {
		t.Errorf("nccl.conf after turning the file off: %v\n%q\nwant the operator's file as it was:\n%q", err, b, operator)
	}
	if _, err := os.Stat(filepath.Join(root, nccltopo.File)); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", nccltopo.File, err)
	}
	if code, out, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitOK {
		t.Errorf("plan after apply: exit %d\n%s%s", code, out, errOut)
	}
}
