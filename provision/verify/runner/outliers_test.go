package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	// What a warning or a failed check says, by the fields a reader of
	// the report acts on.
	type warningView struct {
		Host, Device, Metric string
		V, Median, Margin    float64
	}
	narrowGPU5 := warningView{Host: "gpu02", Device: "00000000:20:00.0", Metric: "pcie_width", V: 8, Median: 16, Margin: 0.1}
	for name, tc := range map[string]struct {
		mode     spec.Outliers
		warnings []warningView
		failed   []string
	}{
		"warn by default": {warnings: []warningView{narrowGPU5}},
		// GPU 5 of gpu02 sits at 0x1b+5 = 0x20.
		"fail": {mode: spec.OutliersFail, failed: []string{"gpu02 nvml.peer_outlier[gpu5] fail 00000000:20:00.0"}},
		"off":  {mode: spec.OutliersOff},
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
			var warnings []warningView
			for _, w := range peerOutliers(targets, hosts) {
				warnings = append(warnings, warningView{w.Host, w.Device, w.Metric, w.V, w.Median, w.Margin})
			}
			if diff := cmp.Diff(tc.warnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			var failed []string
			for _, h := range hosts {
				for _, c := range h.Checks {
					busID := ""
					if c.GPU != nil {
						busID = c.GPU.BusID
					}
					failed = append(failed, strings.Join([]string{h.Host, c.ID, string(c.Status), busID}, " "))
				}
			}
			if diff := cmp.Diff(tc.failed, failed); diff != "" {
				t.Errorf("checks added (-want +got):\n%s", diff)
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
				// gpu03's 300 GB/s against the median of 480, 479, 300
				// and 481: (479+480)/2. The fleet test is not compared.
				type view struct {
					Host, Metric, Scope string
					V, Median           float64
				}
				var got []view
				for _, w := range warnings {
					got = append(got, view{w.Host, w.Metric, string(w.Scope), w.V, w.Median})
				}
				if diff := cmp.Diff([]view{{"gpu03", "nccl.single.busbw_gbps", "fleet", 300, 479.5}}, got); diff != "" {
					t.Errorf("warnings (-want +got):\n%s", diff)
				}
				if len(failed) != 0 {
					t.Errorf("failed %v, want none", failed)
				}
			default:
				if len(warnings) != 0 || len(failed) != 1 || !strings.HasPrefix(failed[0], "gpu03 nccl.single: busbw 300.00 GB/s is 37% below the median 479.50 GB/s of 4 hosts") {
					t.Errorf("warnings %+v, failed %v", warnings, failed)
				}
			}
		})
	}
}
