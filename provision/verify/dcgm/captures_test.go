package dcgm

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// summary writes one line per test: "Category|Name|Status", then the
// GPUs DCGM named per status (" fail=0" / " pass=1,2"), " all=Pass" for a
// DCGM 3 summary over every GPU, and the number of warning and info texts.
func summary(d *Diag) []string {
	var out []string
	for _, t := range d.Tests {
		s := t.Category + "|" + t.Name + "|" + t.Status
		by := map[string][]string{}
		for id, st := range t.GPUs {
			by[strings.ToLower(st)] = append(by[strings.ToLower(st)], fmt.Sprint(id))
		}
		var keys []string
		for k := range by {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sort.Strings(by[k])
			s += " " + k + "=" + strings.Join(by[k], ",")
		}
		if t.All != "" {
			s += " all=" + t.All
		}
		if len(t.Warnings) > 0 {
			s += fmt.Sprintf(" warnings=%d", len(t.Warnings))
		}
		if len(t.Info) > 0 {
			s += fmt.Sprintf(" info=%d", len(t.Info))
		}
		out = append(out, s)
	}
	return out
}

// deployment3 is the Deployment section of DCGM 3.x, every test passed.
var deployment3 = []string{
	"Deployment|Denylist|Pass", "Deployment|NVML Library|Pass", "Deployment|CUDA Main Library|Pass",
	"Deployment|Permissions and OS Blocks|Pass", "Deployment|Persistence Mode|Pass", "Deployment|Environment Variables|Pass",
	"Deployment|Page Retirement/Row Remap|Pass", "Deployment|Graphics Processes|Pass", "Deployment|Inforom|Pass",
}

func with(base []string, more ...string) []string {
	return append(append([]string{}, base...), more...)
}

func gpus(st string, n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprint(i)
	}
	return st + "=" + strings.Join(ids, ",")
}

// TestPublishedCaptures reads every published dcgmi diag output in
// testdata (sources and the authors' verdicts in testdata/README.md) and
// checks each test's section, status, per-GPU results and messages against
// what the capture shows, read by hand.
func TestPublishedCaptures(t *testing.T) {
	tests := []struct {
		file     string
		version  string
		want     []string
		warnings map[string]string // test name -> text its first warning starts with
	}{
		{"dcgmi-diag-r2-dcgm3.3.3-8xA100-p4de-healthy.txt", "3.3.3",
			with(deployment3, "Integration|PCIe|Pass all=Pass", "Hardware|GPU Memory|Pass all=Pass"), nil},
		{"dcgmi-diag-r3-dcgm3.3.9-8xH200-healthy-eud-skip.txt", "3.3.9",
			with(deployment3, "Integration|PCIe|Pass all=Pass", "Hardware|GPU Memory|Pass all=Pass", "Hardware|Diagnostic|Pass all=Pass",
				"Stress|Targeted Stress|Pass all=Pass", "Stress|Targeted Power|Pass all=Pass", "Stress|Memory Bandwidth|Pass all=Pass", "Stress|EUD Test|Skip all=Skip"), nil},
		// Printed twice (two tasks of one srun): read as one run.
		{"dcgmi-diag-r3-dcgm3.3.9-2xRTXPRO6000-all-skip-printed-twice.txt", "3.3.9",
			with(deployment3, "Integration|PCIe|Skip all=Skip", "Hardware|GPU Memory|Skip all=Skip",
				"Stress|Targeted Stress|Skip all=Skip", "Stress|Targeted Power|Skip all=Skip", "Stress|Memory Bandwidth|Skip all=Skip", "Stress|EUD Test|Skip all=Skip"), nil},
		{"dcgmi-diag-r1-dcgm3.1.8-8xH200-persistence-mode-fail.txt", "3.1.8",
			[]string{"Deployment|Denylist|Pass", "Deployment|NVML Library|Pass", "Deployment|CUDA Main Library|Pass",
				"Deployment|Permissions and OS Blocks|Pass", "Deployment|Persistence Mode|Fail warnings=1", "Deployment|Environment Variables|Pass",
				"Deployment|Page Retirement/Row Remap|Pass", "Deployment|Graphics Processes|Pass", "Deployment|Inforom|Pass"},
			map[string]string{"Persistence Mode": `Persistence mode for GPU 0 is currently disabled. The DCGM diagnostic requires peristence mode to be enabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root., Persistence mode for GPU 1 is currently disabled.`}},
		{"dcgmi-diag-r2-dcgm3.3.0-8xGA102-pcie-fail-all.txt", "3.3.0",
			with(deployment3, "Integration|PCIe|Fail all=Fail warnings=1", "Hardware|GPU Memory|Skip all=Skip"),
			map[string]string{"PCIe": "GPU 0 Error using CUDA API cudaDeviceGetByPCIBusId Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics. 'system has unsupported display driver / cuda driver combination' for GPU 0, bus ID = 00000000:1B:00.0"}},
		{"dcgmi-diag-r1-dcgm-blacklist-era-4xP100.txt", "",
			[]string{"Deployment|Blacklist|Pass", "Deployment|NVML Library|Pass", "Deployment|CUDA Main Library|Pass", "Deployment|CUDA Toolkit Libraries|Skip",
				"Deployment|Permissions and OS Blocks|Pass", "Deployment|Persistence Mode|Pass", "Deployment|Environment Variables|Pass",
				"Deployment|Page Retirement|Pass", "Deployment|Graphics Processes|Pass"}, nil},
		{"dcgmi-diag-r2-dcgm-blacklist-era-4xP100-performance-section.txt", "",
			[]string{"Deployment|Blacklist|Pass", "Deployment|NVML Library|Pass", "Deployment|CUDA Main Library|Pass", "Deployment|CUDA Toolkit Libraries|Skip",
				"Deployment|Permissions and OS Blocks|Pass", "Deployment|Persistence Mode|Pass", "Deployment|Environment Variables|Pass",
				"Deployment|Page Retirement|Pass", "Deployment|Graphics Processes|Pass",
				"Hardware|GPU Memory|Pass all=Pass", "Hardware|Diagnostic|Skip all=Skip", "Integration|PCIe|Pass all=Pass",
				"Performance|SM Performance|Skip all=Skip", "Performance|Targeted Performance|Skip all=Skip", "Performance|Targeted Power|Skip all=Skip"}, nil},
		{"dcgmi-diag-deployment-only-dcgm4.1.1-8xV100.txt", "4.1.1",
			[]string{"Deployment|software|Pass " + gpus("pass", 8)}, nil},
		{"dcgmi-diag-r2-dcgm4.4.2-1gpu-healthy.txt", "4.4.2",
			[]string{"Deployment|software|Pass pass=0", "Hardware|memory|Pass pass=0", "Integration|pcie|Pass pass=0"}, nil},
		// DCGM 4 failed pcie as a whole although every GPU's own result
		// passed: the test's status stands, with its four warnings.
		{"dcgmi-diag-r2-dcgm4.2.3-4xL40S-pcie-fail-four-warnings.txt", "4.2.3",
			[]string{"Deployment|software|Pass " + gpus("pass", 4), "Hardware|memory|Pass " + gpus("pass", 4), "Integration|pcie|Fail " + gpus("pass", 4) + " warnings=4"},
			map[string]string{"pcie": "There was an internal error during the test: 'A child process (152) exited with non-zero status 1' Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics."}},
		{"dcgmi-diag-r2-dcgm4.4.1-8xB200-pcie-fail-warning.txt", "4.4.1",
			[]string{"Deployment|software|Pass " + gpus("pass", 8), "Hardware|memory|Pass " + gpus("pass", 8), "Integration|pcie|Fail " + gpus("pass", 8) + " warnings=1"},
			map[string]string{"pcie": "There was an internal error during the test: 'Output of child process (11167) couldn't be parsed: '* Line 1, Column 1   Syntax error: value, object or array expected. '' Check DCGM and system logs for errors."}},
		// DCGM 2.x: "Blacklist" (DCGM 3 says "Denylist") with the A100-era
		// "Page Retirement/Row Remap", no Metadata section, so no version.
		{"dcgmi-diag-r4-dcgm2x-blacklist-era-healthy-gcm.txt", "",
			[]string{"Deployment|Blacklist|Pass", "Deployment|NVML Library|Pass", "Deployment|CUDA Main Library|Pass",
				"Deployment|Permissions and OS Blocks|Pass", "Deployment|Persistence Mode|Pass", "Deployment|Environment Variables|Pass",
				"Deployment|Page Retirement/Row Remap|Pass", "Deployment|Graphics Processes|Pass", "Deployment|Inforom|Pass",
				"Integration|PCIe|Pass all=Pass", "Hardware|GPU Memory|Pass all=Pass", "Hardware|Diagnostic|Pass all=Pass", "Hardware|Pulse Test|Pass all=Pass",
				"Stress|SM Stress|Pass all=Pass", "Stress|Targeted Stress|Pass all=Pass", "Stress|Targeted Power|Pass all=Pass",
				"Stress|Memory Bandwidth|Pass all=Pass", "Stress|Memtest|Pass all=Pass"}, nil},
		// Excerpts: no section heading above the rows, so no section.
		{"dcgmi-diag-r2-fragment-8gpu-gpu-memory-fail-gpu0-thermal.txt", "", nil, nil},
		{"dcgmi-diag-fragment-deployment-error-row-remap-pending.txt", "",
			[]string{"Deployment|Error|Fail warnings=1"},
			map[string]string{"Error": "GPU 3 has uncorrectable memory errors and row remappings are pending"}},
		{"dcgmi-diag-r2-dcgm3.3.1-excerpt-gpu-memory-fail-gpu0-info-row.txt", "",
			[]string{"Hardware|GPU Memory|Fail fail=0 pass=1 warnings=1 info=1", "Hardware|Diagnostic|Fail all=Fail warnings=1", "Stress|Targeted Stress|Fail all=Fail"},
			map[string]string{"GPU Memory": "GPU 0 Error using CUDA API cuCtxCreate Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics. Unable to create CUDA context: 'CUDA-capable device(s) is/are busy or unavailable'.",
				"Diagnostic": "GPU 0 API call cuMemGetInfo failed: 'context is destroyed' Check DCGM"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			d, err := Parse(read(t, tt.file))
			if tt.want == nil {
				if err == nil {
					t.Fatalf("an excerpt without a section heading parsed: %v", summary(d))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Version != tt.version {
				t.Errorf("version %q, want %q", d.Version, tt.version)
			}
			if diff := cmp.Diff(tt.want, summary(d)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, x := range d.Tests {
				if w, ok := tt.warnings[x.Name]; ok && (len(x.Warnings) == 0 || !strings.HasPrefix(x.Warnings[0], w)) {
					t.Errorf("%s: warnings %q, want the first to start %q", x.Name, x.Warnings, w)
				}
			}
		})
	}
}

// TestParseTextSectionlessExcerpt: the thermal excerpt has no section
// heading; under one it reads as GPU 0 failing GPU Memory with the whole
// warning.
func TestParseTextSectionlessExcerpt(t *testing.T) {
	data := append([]byte("+-----  Hardware  ----------+------------------------------------------------+\n"), read(t, "dcgmi-diag-r2-fragment-8gpu-gpu-memory-fail-gpu0-thermal.txt")...)
	d, err := ParseText(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Hardware|GPU Memory|Fail fail=0 pass=1,2,3,4,5,6,7 warnings=1"}
	if diff := cmp.Diff(want, summary(d)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if w := "GPU 0 Thermal violations totaling 13.3 seconds started at 9.7 seconds into the test for GPU 0 Verify that the cooling on this machine is functional, including external, thermal material interface, fans, and any other components."; d.Tests[0].Warnings[0] != w {
		t.Errorf("warning %q", d.Tests[0].Warnings[0])
	}
}

// TestPublishedJSONDocuments reads the complete published `dcgmi diag -j`
// documents (DCGM 3's "DCGM GPU Diagnostic" shape: level-one results
// without a GPU id, per-GPU results with "gpu_ids" as a string and "info"
// as one string) and checks each test and the first info text of the
// tests that carry one, read by hand from the files.
func TestPublishedJSONDocuments(t *testing.T) {
	r2 := with(deployment3, "Integration|PCIe|Pass pass=0 info=1", "Hardware|GPU Memory|Pass pass=0 info=1")
	tests := []struct {
		file string
		want []string
		info map[string]string // test name -> its first info text starts with
	}{
		{"dcgmi-diag-r2-json-dcgm3-1gpu-healthy-virtualclient.json", r2, map[string]string{
			"PCIe":       "GPU 0 GPU 0 GPU to Host bandwidth:\t\t13.15 GB/s, GPU 0 GPU 0 Host to GPU bandwidth:\t\t13.11 GB/s, GPU 0 GPU 0 bidirectional bandwidth:\t22.49 GB/s",
			"GPU Memory": "GPU 0 Allocated 15206918958 bytes (97.3%)",
		}},
		{"dcgmi-diag-r3-json-dcgm3-1gpu-healthy-virtualclient.json",
			with(r2, "Hardware|Diagnostic|Pass pass=0 info=1", "Hardware|EUD Test|Skip skip=0",
				"Stress|Targeted Stress|Pass pass=0 info=1", "Stress|Targeted Power|Pass pass=0 info=1", "Stress|Memory Bandwidth|Pass pass=0"),
			map[string]string{
				"Diagnostic":      "GPU 0 Allocated space for 408 output matricies from 13826359296 bytes available., GPU 0 Running with precisions: FP64 0, FP32 1, FP16 1, GPU 0 GPU 0 calculated at approximately 11103.02 gigaflops",
				"Targeted Stress": "GPU 0 GPU 0 relative stress level\t3184",
				"Targeted Power":  "GPU 0 GPU 0 power average:\t70 W",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			d, err := Parse(read(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if d.Version != "" || d.RuntimeError != "" {
				t.Errorf("version %q runtime error %q: the document states neither", d.Version, d.RuntimeError)
			}
			if diff := cmp.Diff(tt.want, summary(d)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, x := range d.Tests {
				if len(x.Warnings) > 0 {
					t.Errorf("%s: warnings %q in a document that has none", x.Name, x.Warnings)
				}
				if w, ok := tt.info[x.Name]; ok && (len(x.Info) == 0 || !strings.HasPrefix(x.Info[0], w)) {
					t.Errorf("%s: info %q, want the first to start %q", x.Name, x.Info, w)
				}
			}
		})
	}
}
