package verify

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/smi"
)

// fabricCapture parses one published `nvidia-smi -q` Fabric section.
func fabricCapture(t *testing.T, file string) nvmlfacts.Fabric {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("smi", "testdata", "fabric", file))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := smi.ParseFabric(string(b))
	if err != nil || len(fs) != 1 {
		t.Fatalf("%s: %v %v", file, fs, err)
	}
	return fs[0]
}

// TestFabricCaptures judges nvml.fabric on published fabric sections: a
// tray whose four GPUs report the registered capture passes; one GPU with
// Azure's "Insufficient Resources" capture fails naming it; a GPU in
// another clique fails; the nvidia-smi fallback, which reads no fabric,
// is an error; the simulated GB200 tray's NVML passes.
func TestFabricCaptures(t *testing.T) {
	t.Parallel()
	ok := fabricCapture(t, "nvidia-smi-q-fabric-gb200-success-health-unhealthy.txt")
	bad := fabricCapture(t, "nvidia-smi-q-fabric-insufficient-resources-azure.txt")
	if d := cmp.Diff(nvmlfacts.Fabric{State: "Completed", Status: "Insufficient Resources", CliqueID: 0, ClusterUUID: zeroUUID}, bad); d != "" {
		t.Errorf("parsed Azure capture (-want +got):\n%s", d)
	}
	tray := func(f ...nvmlfacts.Fabric) *nvmlfacts.Report {
		rep := &nvmlfacts.Report{Source: nvmlfacts.SourceNVML}
		for i := range 4 {
			g := nvmlfacts.GPU{Index: i, BusID: []string{"00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"}[i]}
			fi := ok
			if i < len(f) {
				fi = f[i]
			}
			g.Fabric = &fi
			rep.GPUs = append(rep.GPUs, g)
		}
		return rep
	}
	other := ok
	other.CliqueID = 3
	smiRep := tray()
	smiRep.Source, smiRep.NotCollected = nvmlfacts.SourceNvidiaSMI, []string{nvmlfacts.FactFabric}
	type verdict struct {
		Status  Status
		Message string
	}
	tests := []struct {
		name string
		rep  *nvmlfacts.Report
		want verdict
	}{
		{"registered", tray(), verdict{StatusPass, ""}},
		{"insufficient resources", tray(ok, ok, bad), verdict{StatusFail, "gpu2 (00000018:01:00.0) fabric status Insufficient Resources"}},
		{"another clique", tray(ok, other), verdict{StatusFail, "the host's GPUs are in different fabric cliques: clique 2 cluster dc6e40c4-d722-4357-9ba6-5291dd461278 (gpu0,gpu2,gpu3); clique 3 cluster dc6e40c4-d722-4357-9ba6-5291dd461278 (gpu1)"}},
		{"nvidia-smi fallback", smiRep, verdict{StatusError, "the NVML source (nvidia-smi) reports no fabric state"}},
		{"simulated tray", collectMock(t, nvmlfacts.MockGB200Tray), verdict{StatusPass, ""}},
		// The fault the simulated trays plant for a fabric the switch
		// trays did not train (sim's fabric_not_started).
		{"simulated tray, fabric not started", collectMock(t, nvmlfacts.MockGB200Tray, nvmlfacts.Fault{Kind: nvmlfacts.FaultFabricNotStarted, GPU: 1}), verdict{StatusFail, "gpu1 (00000009:01:00.0) fabric state Not Started"}},
	}
	for _, tt := range tests {
		rs := checkFabric(Expectation{Fabric: true}, tt.rep)
		if len(rs) != 1 || rs[0].ID != "nvml.fabric" {
			t.Fatalf("%s: %+v", tt.name, rs)
		}
		if d := cmp.Diff(tt.want, verdict{rs[0].Status, rs[0].Message}); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
	if rs := checkFabric(Expectation{}, tray()); len(rs) != 0 {
		t.Errorf("a board that is no rack-scale tray got %+v", rs)
	}
}

// TestVBIOSPin judges nvml.vbios against firmware { gpu_vbios }: the
// simulated GB200 tray's GPUs pass their own version, fail another one
// naming the GPUs, and a report without VBIOS is an error.
func TestVBIOSPin(t *testing.T) {
	t.Parallel()
	rep := collectMock(t, nvmlfacts.MockGB200Tray)
	type verdict struct {
		Status  Status
		Message string
	}
	for _, tt := range []struct {
		pin  string
		rep  *nvmlfacts.Report
		want verdict
	}{
		{"97.00.0B.00.2F", rep, verdict{StatusPass, ""}},
		{"97.00.0B.00.30", rep, verdict{StatusFail, "gpu0, gpu1, gpu2, gpu3 run VBIOS 97.00.0B.00.2F, the spec pins 97.00.0B.00.30"}},
		{"97.00.0B.00.2F", collectMock(t, nvmlfacts.MockGB300Tray), verdict{StatusError, "no VBIOS version reported for gpu0, gpu1, gpu2, gpu3"}},
	} {
		rs := checkVBIOS(Expectation{VBIOS: tt.pin}, tt.rep)
		if len(rs) != 1 || rs[0].ID != "nvml.vbios" {
			t.Fatalf("%+v", rs)
		}
		if d := cmp.Diff(tt.want, verdict{rs[0].Status, rs[0].Message}); d != "" {
			t.Errorf("pin %s (-want +got):\n%s", tt.pin, d)
		}
	}
}
