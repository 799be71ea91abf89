package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/promtool"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// TestPrometheusGPUsByBusID (issue 27): the per-GPU series were labelled
// by NVML's index, so after GPU 4 (0000:9d:00.0) fell off the bus the
// series of gpu="4" were 0000:c3:00.0's, gpu="5" 0000:d1:00.0's, and
// gpu="7" vanished: a dashboard's history of one GPU jumped to another.
// Now gpu is the spec's index, matched by bus id as the check ids are,
// every per-GPU series carries pci_bus_id, and the missing GPU has no
// series at all (nvml.gpu_count is what fails for it).
func TestPrometheusGPUsByBusID(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	prom := filepath.Join(t.TempDir(), "gpuform.prom")
	if code, out, errOut := runCLIEnv(t, env, "verify", "-format", "prometheus", "-out", prom, hgxSpec(t, "sim://hgx-h100-xid79", "")); code != ExitReport {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	promtool.CheckMetrics(t, b)
	text := string(b)
	for _, want := range []string{
		`gpuform_gpu_info{host="sim://hgx-h100-xid79",gpu="5",name="NVIDIA H100 80GB HBM3",`,
		`gpuform_gpu_temperature_celsius{host="sim://hgx-h100-xid79",gpu="5",pci_bus_id="00000000:C3:00.0"}`,
		`gpuform_gpu_temperature_celsius{host="sim://hgx-h100-xid79",gpu="7",pci_bus_id="00000000:DF:00.0"}`,
		`gpuform_gpu_pcie_link_width_lanes{host="sim://hgx-h100-xid79",gpu="3",pci_bus_id="00000000:61:00.0"}`,
		`gpuform_check_ok{host="sim://hgx-h100-xid79",check="nvml.gpu_count"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s", want)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "gpuform_gpu_") && strings.Contains(line, `gpu="4"`) {
			t.Errorf("a series for the GPU NVML does not enumerate: %s", line)
		}
		if strings.HasPrefix(line, "gpuform_gpu_info{") && strings.Contains(line, `gpu="5"`) && !strings.Contains(line, `pci_bus_id="00000000:C3:00.0"`) {
			t.Errorf("gpu5 is not 0000:c3:00.0: %s", line)
		}
		if strings.HasPrefix(line, "gpuform_gpu_") && !strings.HasPrefix(line, "gpuform_gpu_info{") && !strings.Contains(line, "pci_bus_id=") {
			t.Errorf("a per-GPU series without pci_bus_id: %s", line)
		}
	}
}

// TestVerifyProcessesLostGPUByBusID (issue 27): on the Xid 79 node, NVML
// lists 0000:c3:00.0's processes as its GPU 4's; verify -processes judges
// them as gpu5's (CPUs of NUMA node 1, NIC mlx5_9), a process on d1 with
// c3's NIC fails as gpu6's, and gpu4, the GPU that fell off the bus, is
// not run and says why instead of being left out.
func TestVerifyProcessesLostGPUByBusID(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	root, err := sim.MaterializeHost("sim://hgx-h100-xid79", state)
	if err != nil {
		t.Fatal(err)
	}
	simProcess(t, root, "5005", "56-111,168-223", "NCCL_IB_HCA==mlx5_9")
	simProcess(t, root, "6006", "56-111,168-223", "NCCL_IB_HCA==mlx5_9")
	if err := os.MkdirAll(filepath.Dir(filepath.Join(root, nvmlfacts.SimProcessesFile)), 0o755); err != nil {
		t.Fatal(err)
	}
	// The replay numbers GPUs as the node did before GPU 4 fell off.
	writeFile(t, filepath.Join(root, nvmlfacts.SimProcessesFile), `[{"gpu": 5, "pid": 5005}, {"gpu": 6, "pid": 6006}]`)
	_, out, errOut := runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + state}, "verify", "-json", "-processes", hgxSpec(t, "sim://hgx-h100-xid79", ""))
	var doc struct {
		Hosts []struct{ Checks []cliCheck }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Hosts) != 1 {
		t.Fatalf("verify -json: %v\n%s\n%s", err, out, errOut)
	}
	got := map[string]cliCheck{}
	for _, c := range doc.Hosts[0].Checks {
		got[c.ID] = c
	}
	if c := got["bind.process[gpu4]"]; c.Status != "skip" || !strings.Contains(c.Message, "not run: gpu4 (00000000:9D:00.0) is not enumerated by NVML") {
		t.Errorf("bind.process[gpu4]: %+v", c)
	}
	if c := got["bind.process[gpu5]"]; c.Status != "pass" || !strings.Contains(c.Observed, "pid 5005") {
		t.Errorf("bind.process[gpu5]: %+v", c)
	}
	if c := got["bind.process[gpu6]"]; c.Status != "fail" || !strings.Contains(c.Observed, "pid 6006") || !strings.Contains(c.Message, "not its GPU's mlx5_10 alone") {
		t.Errorf("bind.process[gpu6]: %+v", c)
	}
	if c := got["bind.process[gpu7]"]; c.Status != "skip" {
		t.Errorf("bind.process[gpu7]: %+v", c)
	}
}
