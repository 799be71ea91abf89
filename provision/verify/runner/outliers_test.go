package runner

import (
	"fmt"
	"testing"

	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/spec"
)

// TestPeerOutliers: a GPU whose link trained at x8 among x16 peers is
// flagged by bus id although no floor is set, as a warning by default and
// as a failed nvml.peer_outlier[gpuN] check with outliers = "fail"; its
// healthy peers and hosts are not.
func TestPeerOutliers(t *testing.T) {
	nvml := func(narrow int) *nvmlfacts.Report {
		rep := &nvmlfacts.Report{}
		for i := range 8 {
			w := 16
			if i == narrow {
				w = 8
			}
			temp, power := 35, 700.0
			rep.GPUs = append(rep.GPUs, nvmlfacts.GPU{Index: i, Name: "NVIDIA H100 80GB HBM3", BusID: fmt.Sprintf("00000000:%02X:00.0", 0x1b+i),
				PCIe: &nvmlfacts.PCIeLink{CurrentGen: 5, MaxGen: 5, CurrentWidth: w, MaxWidth: 16}, TemperatureC: &temp, PowerLimitW: &power})
		}
		return rep
	}
	for name, tc := range map[string]struct {
		mode     spec.Outliers
		warnings int
		failed   string
	}{
		"warn by default": {warnings: 1},
		"fail":            {mode: spec.OutliersFail, failed: "nvml.peer_outlier[gpu5]"},
		"off":             {mode: spec.OutliersOff},
	} {
		t.Run(name, func(t *testing.T) {
			n := &spec.Node{Name: "train", Verify: &spec.Verify{}}
			if tc.mode != "" {
				n.Verify.Outliers = spec.Attr[spec.Outliers]{V: tc.mode, Set: true}
			}
			var targets []target.Host
			var hosts []report.Host
			for i, narrow := range []int{-1, 5, -1} {
				name := fmt.Sprintf("gpu%02d", i+1)
				targets = append(targets, target.Host{Host: spec.Host{Name: name}, Node: n})
				hosts = append(hosts, report.Host{Host: name, NVML: nvml(narrow)})
			}
			warnings := peerOutliers(targets, hosts)
			if len(warnings) != tc.warnings {
				t.Fatalf("%d warnings, want %d: %+v", len(warnings), tc.warnings, warnings)
			}
			for _, w := range warnings {
				if w.Host != "gpu02" || w.Device != "00000000:20:00.0" || w.Metric != "pcie_width" || w.V != 8 || w.Median != 16 || w.Margin != 0.1 {
					t.Errorf("warning %+v", w)
				}
			}
			var failed []string
			for _, h := range hosts {
				for _, c := range h.Checks {
					failed = append(failed, h.Host+" "+c.ID)
					if c.Status != verify.StatusFail || c.GPU == nil || c.GPU.BusID != "00000000:20:00.0" {
						t.Errorf("check %+v", c)
					}
				}
			}
			if tc.failed == "" && len(failed) > 0 || tc.failed != "" && (len(failed) != 1 || failed[0] != "gpu02 "+tc.failed) {
				t.Errorf("failed checks %v, want %q on gpu02", failed, tc.failed)
			}
		})
	}
}
