package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/promtool"
)

// TestPrometheusGPUsByBusID (issue 27): the per-GPU series were labelled
// by NVML's index, so after GPU 4 (0000:9d:00.0) fell off the bus the
// series of gpu="4" were 0000:c3:00.0's, gpu="5" 0000:d1:00.0's, and
// gpu="7" vanished: a dashboard's history of one GPU jumped to another.
// Now gpu is the spec's index, matched by bus id as the check ids are,
// every per-GPU series carries pci_bus_id, and the missing GPU has no
// series at all (nvml.gpu_count is what fails for it).
func TestPrometheusGPUsByBusID(t *testing.T) {
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
