package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyMIGMode: verify { nvml { mig } } is judged per GPU on the
// simulated DGX A100 (MIG off) and shown in the text, JSON and Prometheus
// reports.
func TestVerifyMIGMode(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	spec := func(mode string) string {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `module "dgx" {
  source = "gpuform/dgx-a100"
}
node "a100" {
  hosts    = ["sim://dgx-a100"]
  hardware = module.dgx.hardware
  verify {
    nvml {
      mig = "`+mode+`"
    }
  }
}
`)
		return dir
	}
	code, hosts, out := verifyJSON(t, env, spec("enabled"))
	failed := 0
	for _, c := range hosts["sim://dgx-a100"] {
		if strings.HasPrefix(c.ID, "nvml.mig_mode[") {
			if c.Status != "fail" || c.Observed != "disabled" || c.Expected != "enabled" {
				t.Errorf("%+v", c)
			}
			failed++
		}
	}
	if code != ExitReport || failed != 8 {
		t.Errorf("mig enabled: exit %d, %d mig checks failed\n%s", code, failed, out)
	}
	if _, text, _ := runCLIEnv(t, env, "verify", spec("enabled")); !strings.Contains(text, "nvml.mig_mode[gpu0]") {
		t.Errorf("text report:\n%s", text)
	}

	_, hosts, out = verifyJSON(t, env, spec("disabled"))
	passed := 0
	for _, c := range hosts["sim://dgx-a100"] {
		if strings.HasPrefix(c.ID, "nvml.mig_mode[") && c.Status == "pass" {
			passed++
		}
	}
	if passed != 8 {
		t.Errorf("mig disabled: %d mig checks passed\n%s", passed, out)
	}
	prom := filepath.Join(t.TempDir(), "verify.prom")
	runCLIEnv(t, env, "verify", "-format", "prometheus", "-out", prom, spec("disabled"))
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `gpuform_gpu_mig_mode_enabled{host="sim://dgx-a100",gpu="0",pci_bus_id="00000000:07:00.0"} 0`) {
		t.Errorf("no MIG mode metric:\n%s", b)
	}
}
