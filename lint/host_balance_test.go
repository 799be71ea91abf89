package lint

import (
	"fmt"
	"strings"
	"testing"
)

// TestHostBalance judges hosts at and just below the smallest per-GPU share
// of NVIDIA's designs, each measure on its own; the shares are read from the
// knowledge base, so the cases follow the table.
func TestHostBalance(t *testing.T) {
	share, ok := testKB.MinHostShare()
	if !ok {
		t.Fatal("no host designs")
	}
	cores := int(share.CoresPerGPU * 8)
	memGiB := share.MemoryPerGPU * 8 >> 30
	nvmeGB := share.NVMePerGPU * 8 / 1e9
	const workload = `
  workload "w" {
    parameters    = "1B"
    data_parallel = 8
  }`
	tests := []struct {
		name     string
		hardware string
		workload string
		want     string // measure in the summary; "" for no finding
	}{
		{"at every share", fmt.Sprintf(`cpu_cores = %d, memory = "%dGiB", nvme = "%dGB"`, cores, memGiB, nvmeGB), workload, ""},
		{"one core short", fmt.Sprintf(`cpu_cores = %d`, cores-1), workload, "(CPU cores)"},
		{"one GiB short", fmt.Sprintf(`memory = "%dGiB"`, memGiB-1), workload, "(RAM)"},
		{"one GB of NVMe short", fmt.Sprintf(`nvme = "%dGB"`, nvmeGB-1), workload, "(local NVMe)"},
		{"lean but no workload", `cpu_cores = 8, memory = "64GiB", nvme = "100GB"`, "", ""},
		{"nothing declared", ``, workload, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := fmt.Sprintf(`node "n" {
  hosts    = ["h1"]
  hardware = { gpu_model = "H100 SXM5 80GB", gpu_count = 8, interconnect = "nvswitch", %s }
%s
}
`, tt.hardware, tt.workload)
			cfg := loadSpec(t, map[string]string{"main.gpuform.hcl": src})
			res, diags := Run(cfg, Options{KB: testKB, Now: testNow, MinSeverity: Info})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			var got []string
			for _, f := range res.Findings {
				if f.Rule == "host_balance" {
					got = append(got, f.Summary)
				}
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("unexpected finding: %v", got)
			case tt.want != "" && (len(got) != 1 || !strings.HasSuffix(got[0], tt.want)):
				t.Errorf("findings %v, want one ending %q", got, tt.want)
			}
		})
	}
}
