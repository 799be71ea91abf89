package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
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

// TestPeerOutliersNCCL: a host whose single-node all_reduce trails the
// other hosts with the same GPUs by more than the margin is a warning,
// though above any floor; with outliers = "fail" its nccl.<test> fails
// and says why. Multi-node results (the group's) are not compared.
func TestPeerOutliersNCCL(t *testing.T) {
	run := func(bw float64) nccltest.Result {
		wrong := int64(0)
		return nccltest.Result{Runs: []nccltest.Run{{NGPUs: 8, Rows: []nccltest.Row{{Size: 8 << 30,
			OutOfPlace: nccltest.Half{BusBW: bw, Wrong: &wrong}, InPlace: nccltest.Half{BusBW: bw, Wrong: &wrong}}}}}}
	}
	for name, mode := range map[string]spec.Outliers{"warn": "", "fail": spec.OutliersFail} {
		t.Run(name, func(t *testing.T) {
			n := &spec.Node{Name: "train", Verify: &spec.Verify{NCCLTests: []*spec.NCCLTest{
				{Name: "single", Command: spec.Attr[string]{V: "all_reduce_perf -g 8", Set: true}},
				{Name: "fleet", Command: spec.Attr[string]{V: "mpirun -np 16 all_reduce_perf -g 1", Set: true}},
			}}}
			if mode != "" {
				n.Verify.Outliers = spec.Attr[spec.Outliers]{V: mode, Set: true}
			}
			var targets []target.Host
			var hosts []report.Host
			for i, bw := range []float64{480, 479, 300, 481} {
				h := fmt.Sprintf("gpu%02d", i+1)
				targets = append(targets, target.Host{Host: spec.Host{Name: h}, Node: n})
				hosts = append(hosts, report.Host{Host: h, NVML: &nvmlfacts.Report{GPUs: []nvmlfacts.GPU{{Name: "NVIDIA H100 80GB HBM3"}}},
					NCCL:   map[string]nccltest.Result{"single": run(bw), "fleet": run(100 + float64(i)*100)},
					Checks: []verify.CheckResult{{ID: "nccl.single", Status: verify.StatusPass}, {ID: "nccl.fleet", Status: verify.StatusPass}}})
			}
			warnings := peerOutliers(targets, hosts)
			var failed []string
			for _, h := range hosts {
				for _, c := range h.Checks {
					if c.Status == verify.StatusFail {
						failed = append(failed, h.Host+" "+c.ID+": "+c.Message)
					}
				}
			}
			switch mode {
			case "":
				if len(warnings) != 1 || warnings[0].Host != "gpu03" || warnings[0].Metric != "nccl.single.busbw_gbps" || warnings[0].Scope != "fleet" || len(failed) != 0 {
					t.Errorf("warnings %+v, failed %v", warnings, failed)
				}
			default:
				if len(warnings) != 0 || len(failed) != 1 || !strings.HasPrefix(failed[0], "gpu03 nccl.single: busbw 300.00 GB/s is 37% below the median 479.50 GB/s of 4 hosts") {
					t.Errorf("warnings %+v, failed %v", warnings, failed)
				}
			}
		})
	}
}
