//go:build cgo

package verify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/smi"
)

func TestIdleGPUKeepsPCIePass(t *testing.T) {
	// An idle GPU reports Gen1 with the gpu_idle reason; its negotiated
	// maximum is what counts.
	g := nvmlfacts.GPU{Index: 0, BusID: "00000000:18:00.0",
		PCIe:     &nvmlfacts.PCIeLink{CurrentGen: 1, MaxGen: 5, GPUMaxGen: 5, CurrentWidth: 16, MaxWidth: 16},
		Throttle: &nvmlfacts.Throttle{Mask: 1, Active: []string{nvmlfacts.ThrottleGPUIdle}}}
	if r := checkPCIe(Expectation{KB: testKB}, &g); r.Status != StatusPass || !strings.Contains(r.Observed, "idle at Gen1") || !strings.Contains(r.Observed, "not measured") {
		t.Errorf("idle: %+v (want a pass that says the speed was not measured)", r)
	}
	g.Throttle = &nvmlfacts.Throttle{Active: []string{}}
	if r := checkPCIe(Expectation{KB: testKB}, &g); r.Status != StatusFail || !strings.Contains(r.Message, "00000000:18:00.0") {
		t.Errorf("busy at Gen1: %+v", r)
	}
}

// TestPCIeHostCapMessage checks the message when the link's maximum (GPU
// and host together) is below the GPU's own: a Gen5 GPU in a Gen4 server is
// not fixed by reseating it, so the message names the spec knob.
func TestPCIeHostCapMessage(t *testing.T) {
	tests := []struct {
		name      string
		link      nvmlfacts.PCIeLink
		idle      bool
		status    Status
		want, not string
	}{
		{"host-capped busy", nvmlfacts.PCIeLink{CurrentGen: 4, MaxGen: 4, GPUMaxGen: 5, CurrentWidth: 16, MaxWidth: 16}, false, StatusFail, "min_pcie_gen = 4", "reseat"},
		{"host-capped idle", nvmlfacts.PCIeLink{CurrentGen: 1, MaxGen: 4, GPUMaxGen: 5, CurrentWidth: 16, MaxWidth: 16}, true, StatusFail, "min_pcie_gen = 4", "reseat"},
		{"trained below max", nvmlfacts.PCIeLink{CurrentGen: 3, MaxGen: 5, GPUMaxGen: 5, CurrentWidth: 16, MaxWidth: 16}, false, StatusFail, "reseat", "min_pcie_gen"},
		{"narrow", nvmlfacts.PCIeLink{CurrentGen: 5, MaxGen: 5, GPUMaxGen: 5, CurrentWidth: 8, MaxWidth: 16}, false, StatusFail, "reseat", "min_pcie_gen"},
		{"full", nvmlfacts.PCIeLink{CurrentGen: 5, MaxGen: 5, GPUMaxGen: 5, CurrentWidth: 16, MaxWidth: 16}, false, StatusPass, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			link := tt.link
			g := nvmlfacts.GPU{Index: 0, BusID: "00000000:18:00.0", PCIe: &link, Throttle: &nvmlfacts.Throttle{Active: []string{}}}
			if tt.idle {
				g.Throttle = &nvmlfacts.Throttle{Mask: 1, Active: []string{nvmlfacts.ThrottleGPUIdle}}
			}
			r := checkPCIe(Expectation{KB: testKB}, &g)
			if r.Status != tt.status || !strings.Contains(r.Message, tt.want) || (tt.not != "" && strings.Contains(r.Message, tt.not)) {
				t.Errorf("%+v: want %s with %q and without %q", r, tt.status, tt.want, tt.not)
			}
		})
	}
}

// TestPCIePublishedCaptures judges the PCIe link of published nvidia-smi
// -q -x captures (smi/testdata/README.md): the idle Quadro P2000 at Gen1
// of Gen3 is judged on its link's maximum, and its x8 of x16 fails; the
// A100 at Gen4 x16 passes.
func TestPCIePublishedCaptures(t *testing.T) {
	tests := []struct {
		file            string
		status          Status
		observed, fault string
	}{
		{"nvidia-smi-q-x-QuadroP2000-driver525-v12-x8-of-x16.xml", StatusFail, "Gen3 x8 (idle at Gen1", "downgraded PCIe link on 00000000:17:00.0: width x8 below x16"},
		{"nvidia-smi-q-x-A100-sxm4-80gb-mig-driver535-one-of-4.xml", StatusPass, "Gen4 x16", ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("smi", "testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := smi.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			r := checkPCIe(Expectation{KB: testKB}, &rep.GPUs[0])
			if r.Status != tt.status || !strings.HasPrefix(r.Observed, tt.observed) || !strings.Contains(r.Message, tt.fault) {
				t.Errorf("%s %q %q; want %s, observed starting %q, message with %q", r.Status, r.Observed, r.Message, tt.status, tt.observed, tt.fault)
			}
		})
	}
}
