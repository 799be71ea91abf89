package verify

import (
	"os"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/verify/smi"
)

// TestFallbackReport judges real nvidia-smi captures: the T4's link really
// runs at x8 of x16, and the fallback's blind spots are skipped, not failed.
func TestFallbackReport(t *testing.T) {
	data, err := os.ReadFile("smi/testdata/nvidia-smi-q-x-TeslaT4-driver515-v11.xml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := smi.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	on := true
	exp := Expectation{KB: testKB, GPUCount: 1, GPUModel: "T4", DriverVersion: "515.105.01", ECC: &on, NVLink: NVLinkNone,
		NUMANode: map[int]int{0: 0}, NIC: map[int]NICExpectation{0: {NIC: "mlx5_0"}}}
	got := map[string]CheckResult{}
	for _, r := range Check(exp, rep, HostFacts{}) {
		got[r.ID] = r
	}
	if r := got["nvml.facts"]; r.Status != StatusPass || !strings.Contains(r.Observed, "nvidia-smi") {
		t.Errorf("facts: %+v", r)
	}
	if r := got["nvml.pcie_link[gpu0]"]; r.Status != StatusFail || r.Observed != "Gen3 x8" || r.Expected != "Gen3 x16" || !strings.Contains(r.Message, "00000000:00:1E.0") {
		t.Errorf("pcie: %+v", r)
	}
	// The T4 is passed through to a cloud VM (virtualization_mode
	// Pass-Through): the advice fits a VM, there is no GPU to reseat.
	if r := got["nvml.pcie_link[gpu0]"]; strings.Contains(r.Message, "reseat") || !strings.Contains(r.Message, "virtual machine") || !strings.Contains(r.Message, "min_pcie_width") {
		t.Errorf("pcie advice for a VM: %s", r.Message)
	}
	if r := got["nvml.pcie_link[gpu0]"]; r.GPU == nil || r.GPU.BusID != "00000000:00:1E.0" || r.GPU.UUID != "GPU-d37e67a5-91dd-3774-a5cb-99096249601a" || r.GPU.Serial != "0000000000000" {
		t.Errorf("pcie GPU identity: %+v", r.GPU)
	}
	// The fallback could not see what these judge, which the spec asked
	// for: the check was not made, an error that says why, never a skip
	// the gate would pass.
	for _, id := range []string{"nvml.nvlink[gpu0]", "nvml.numa_node[gpu0]", "nvml.gpu_nic[gpu0]"} {
		if r := got[id]; r.Status != StatusError || !strings.Contains(r.Message, "nvidia-smi") || r.Blocks() != true {
			t.Errorf("%s: %+v", id, r)
		}
	}
	for _, id := range []string{"nvml.gpu_count", "nvml.gpu_model", "nvml.driver_version", "nvml.ecc_mode[gpu0]", "nvml.ecc_uncorrectable[gpu0]", "nvml.row_remap[gpu0]", "nvml.throttle[gpu0]"} {
		if r := got[id]; r.Status != StatusPass {
			t.Errorf("%s: %+v", id, r)
		}
	}
}

// TestFallbackMIG judges verify { nvml { mig } } on the nvidia-smi path
// against real captures: the A100 with MIG enabled (and pending enabled)
// and the T4, which has no MIG (mig_mode N/A).
func TestFallbackMIG(t *testing.T) {
	on, off := true, false
	for _, tt := range []struct {
		file     string
		want     *bool
		status   Status
		observed string
		message  string
	}{
		{"nvidia-smi-q-x-A100-sxm4-80gb-mig-driver535-one-of-4.xml", &on, StatusPass, "enabled", ""},
		{"nvidia-smi-q-x-A100-sxm4-80gb-mig-driver535-one-of-4.xml", &off, StatusFail, "enabled", "the spec wants disabled"},
		{"nvidia-smi-q-x-TeslaT4-driver515-v11.xml", &off, StatusPass, "not supported", ""},
		{"nvidia-smi-q-x-TeslaT4-driver515-v11.xml", &on, StatusFail, "not supported", "reports no MIG mode"},
	} {
		data, err := os.ReadFile("smi/testdata/" + tt.file)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := smi.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		var r *CheckResult
		for _, c := range Check(Expectation{KB: testKB, MIG: tt.want}, rep, HostFacts{}) {
			if c.ID == "nvml.mig_mode[gpu0]" {
				c := c
				r = &c
			}
		}
		if r == nil || r.Status != tt.status || r.Observed != tt.observed || !strings.Contains(r.Message, tt.message) {
			t.Errorf("%s, mig %v: %+v", tt.file, *tt.want, r)
		}
	}
}
