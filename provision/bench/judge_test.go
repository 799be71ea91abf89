package bench

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
)

const h100 = "H100 SXM5 80GB (HGX/DGX H100)"

// hgxH100 is an 8-GPU HGX H100 as the facts probe describes one: GPUs 0-3
// on NUMA node 0 and 4-7 on node 1, Gen5 x16, eight 400 Gb/s NDR ports.
func hgxH100() HostInfo {
	h := HostInfo{Name: "gpu1", NUMA: map[int]string{0: "0-55", 1: "56-111"}, SpecBind: map[int]int{}, Pairing: map[int]string{}, Nodes: 1}
	for i := 0; i < 8; i++ {
		h.GPUs = append(h.GPUs, GPU{Index: i, Address: fmt.Sprintf("0000:%02x:00.0", 0x18+i*0x10), NUMA: i / 4, Model: h100, Gen: 5, MaxGen: 5, Width: 16, MaxWidth: 16})
		h.NICs = append(h.NICs, NIC{Name: fmt.Sprintf("mlx5_%d", i), Port: 1, RateGbps: 400, RateText: "400 Gb/sec (4X NDR)", NUMA: i / 4, LinkLayer: "InfiniBand"})
	}
	return h
}

// healthy are measurements in the range healthy HGX H100 nodes report
// (nvbandwidth device_local_copy ~1.5 TB/s, CE peer copies ~390 GB/s,
// H2D ~55 GB/s at Gen5 x16, ib_write_bw ~390 Gb/s per NDR port).
func healthy(h HostInfo) Observations {
	o := Observations{HBM: map[int]float64{}, Peer: map[Pair]float64{}, NICs: map[string]float64{},
		HostToDevice: map[int]map[int]float64{0: {}, 1: {}}, DeviceToHost: map[int]map[int]float64{0: {}, 1: {}},
		AllReduce: map[int]float64{2: 360, 4: 370, 8: 480}, Binding: "numactl"}
	for _, g := range h.GPUs {
		o.HBM[g.Index] = 1500
		for _, d := range h.GPUs {
			if d.Index != g.Index {
				o.Peer[Pair{g.Index, d.Index}] = 390
			}
		}
		for numa := range 2 {
			v := 55.0
			if numa != g.NUMA {
				v = 40
			}
			o.HostToDevice[numa][g.Index] = v
			o.DeviceToHost[numa][g.Index] = v
		}
	}
	for _, n := range h.NICs {
		o.NICs[n.Name] = 390.0 / 8
	}
	return o
}

func loadKB(t *testing.T) *kb.KB {
	t.Helper()
	k, err := kb.Load()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestDiagnose(t *testing.T) {
	k := loadKB(t)
	tests := map[string]struct {
		info   func() HostInfo
		obs    func(HostInfo) Observations
		layer  Layer  // "" means no bottleneck
		device string // the bottleneck's device
		inFix  string // a word the fix must carry
		also   string // a device that must be among the other findings
		reason string // a phrase of the reasoning
		// inMessage is a phrase the bottleneck's message must carry.
		inMessage string
	}{
		"healthy": {info: hgxH100, obs: healthy},
		// hgx-h100-degraded: GPU 5 trained at x8, mlx5_3 at half rate.
		"degraded": {
			info: func() HostInfo {
				h := hgxH100()
				h.GPUs[5].Width = 8
				h.NICs[3].RateGbps, h.NICs[3].RateText = 200, "200 Gb/sec (4X HDR)"
				return h
			},
			obs: func(h HostInfo) Observations {
				o := healthy(h)
				o.HostToDevice[1][5], o.DeviceToHost[1][5] = 26, 26
				o.HostToDevice[0][5], o.DeviceToHost[0][5] = 20, 20
				o.NICs["mlx5_3"] = 195.0 / 8
				return o
			},
			layer: LayerHostGPU, device: "GPU 5", inFix: "x8 of its x16", also: "mlx5_3",
		},
		// The spec binds GPU 5 to node 0; sysfs puts it on node 1.
		"numa misbound": {
			info: func() HostInfo {
				h := hgxH100()
				h.SpecBind = map[int]int{0: 0, 1: 0, 2: 0, 3: 0, 4: 1, 5: 0, 6: 1, 7: 1}
				return h
			},
			obs:   healthy,
			layer: LayerHostGPU, device: "GPU 5", inFix: "node = 1",
			inMessage: "on node 1, where it measures 55.0 GB/s: the spec's binding costs 27%",
		},
		// Two nodes: each node alone is healthy, together they reach a
		// fraction of what their NICs carry, and the workload's
		// throughput drops only across nodes.
		"multi-node slow network": {
			info: func() HostInfo { h := hgxH100(); h.Nodes = 2; return h },
			obs: func(h HostInfo) Observations {
				o := healthy(h)
				o.MultiNode = map[int]float64{2: 90}
				o.Workload = map[int]float64{1: 100, 2: 198, 4: 390, 8: 770}
				return o
			},
			layer: LayerNetwork, device: "all_reduce 2 nodes", reason: "multi-node drops",
		},
		// The workload stops scaling inside one node and peer copies are
		// slow: the NVLink layer, not the network.
		"single-node drop": {
			info: hgxH100,
			obs: func(h HostInfo) Observations {
				o := healthy(h)
				o.Peer[Pair{2, 6}] = 120
				o.Workload = map[int]float64{1: 100, 2: 190, 4: 330, 8: 500}
				o.NICs["mlx5_1"] = 200.0 / 8
				return o
			},
			layer: LayerGPUGPU, device: "GPU 2 -> GPU 6", reason: "inside the node", also: "mlx5_1",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			info := tt.info()
			h := Judge(k, info, tt.obs(info), nil, Layers())
			b := h.Bottleneck
			if tt.layer == "" {
				if b != nil {
					t.Fatalf("bottleneck on a healthy host: %+v", *b)
				}
				for _, m := range h.Layers {
					if m.Verdict == VerdictBelow {
						t.Errorf("below on a healthy host: %+v", m)
					}
				}
				return
			}
			if b == nil {
				t.Fatalf("no bottleneck; layers: %+v", h.Layers)
			}
			if b.Layer != tt.layer || b.Device != tt.device {
				t.Errorf("bottleneck %s %s, want %s %s (%s)", b.Layer, b.Device, tt.layer, tt.device, b.Message)
			}
			if !strings.Contains(b.Fix, tt.inFix) {
				t.Errorf("fix %q does not say %q", b.Fix, tt.inFix)
			}
			if !strings.Contains(b.Message, tt.inMessage) {
				t.Errorf("message %q does not say %q", b.Message, tt.inMessage)
			}
			if !strings.Contains(b.Reasoning, tt.reason) {
				t.Errorf("reasoning %q does not say %q", b.Reasoning, tt.reason)
			}
			if tt.also != "" {
				found := false
				for _, f := range b.Also {
					found = found || f.Device == tt.also
				}
				if !found {
					t.Errorf("%s is not among the other findings: %+v", tt.also, b.Also)
				}
			}
		})
	}
}

// TestMissingToolIsNotAPass: a layer whose tool is absent is reported as
// not measured with its package, and the host is not OK.
func TestMissingToolIsNotAPass(t *testing.T) {
	info := hgxH100()
	o := healthy(info)
	o.NICs = nil
	o.Missing = map[string]Missing{string(LayerNetwork): {Tool: "ib_write_bw", Package: "perftest"}}
	h := Judge(loadKB(t), info, o, nil, []Layer{LayerNetwork})
	if len(h.Layers) != 1 || h.Layers[0].Verdict != VerdictNotMeasured || h.Layers[0].Install != "perftest" {
		t.Fatalf("layers: %+v", h.Layers)
	}
	r := Report{Hosts: []Host{h}}
	if !r.OK() {
		return
	}
	// A report with nothing measured must not read as healthy.
	t.Error("a report whose only layer was not measured is OK")
}

// TestScalingEfficiency: T(n) / (n × T(1)).
func TestScalingEfficiency(t *testing.T) {
	info := hgxH100()
	o := healthy(info)
	o.Workload = map[int]float64{1: 100, 2: 180, 8: 640}
	h := Judge(loadKB(t), info, o, nil, Layers())
	got := map[int]float64{}
	for _, p := range h.Scaling {
		if p.Efficiency != nil && p.EfficiencyOf == "workload" {
			got[p.GPUs] = *p.Efficiency
		}
	}
	want := map[int]float64{1: 1, 2: 0.9, 8: 0.8}
	for n, w := range want {
		if g, ok := got[n]; !ok || g < w-1e-9 || g > w+1e-9 {
			t.Errorf("efficiency at %d GPUs = %v, want %v", n, g, w)
		}
	}
}

// TestStorageFloors: storage is judged only against the spec's floors and
// reported without a verdict where the spec gives none.
func TestStorageFloors(t *testing.T) {
	info := hgxH100()
	b := &spec.Bench{Storage: []*spec.BenchStorage{
		{Name: "dataset", Path: spec.Attr[string]{V: "/data", Set: true}, MinReadGBps: spec.Attr[float64]{V: 5, Set: true}},
		{Name: "checkpoint", Path: spec.Attr[string]{V: "/ckpt", Set: true}},
	}}
	o := Observations{Storage: map[string]FioResult{
		"dataset":    {ReadGBps: ptr(3.2), WriteGBps: ptr(1.5)},
		"checkpoint": {ReadGBps: ptr(2.0), WriteGBps: ptr(1.0)},
	}}
	h := Judge(loadKB(t), info, o, b, []Layer{LayerStorage})
	got := map[string]Verdict{}
	for _, m := range h.Layers {
		got[m.Device+" "+m.Test] = m.Verdict
	}
	want := map[string]Verdict{
		"dataset /data sequential_read":     VerdictBelow,
		"dataset /data sequential_write":    VerdictNoExpectation,
		"checkpoint /ckpt sequential_read":  VerdictNoExpectation,
		"checkpoint /ckpt sequential_write": VerdictNoExpectation,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	if h.Bottleneck == nil || h.Bottleneck.Layer != LayerStorage {
		t.Errorf("bottleneck %+v", h.Bottleneck)
	}
}

// TestWorkloadFailureIsNotOK: a workload that printed no throughput makes
// the report not OK.
func TestWorkloadFailureIsNotOK(t *testing.T) {
	info := hgxH100()
	o := healthy(info)
	o.Missing = map[string]Missing{"workload": {Reason: "at 1 GPUs: exit status 1 and no line matches"}}
	h := Judge(loadKB(t), info, o, nil, Layers())
	if r := (Report{Hosts: []Host{h}}); r.OK() || h.WorkloadError == "" {
		t.Errorf("report OK with a failed workload: %+v", h.WorkloadError)
	}
}

func TestParseLayers(t *testing.T) {
	got, err := ParseLayers([]string{"hbm,host_gpu", "hbm"})
	if err != nil || len(got) != 2 || got[0] != LayerHBM || got[1] != LayerHostGPU {
		t.Errorf("got %v, %v", got, err)
	}
	if all, _ := ParseLayers(nil); len(all) != len(Layers()) {
		t.Errorf("empty list: %v", all)
	}
	if _, err := ParseLayers([]string{"nvlink"}); err == nil || !strings.Contains(err.Error(), "hbm, gpu_gpu") {
		t.Errorf("unknown layer: %v", err)
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"400 Gb/sec (4X NDR)": 400, "200 Gb/sec (4X HDR)": 200, "25 Gb/sec (1X EDR)": 25, "": 0, "invalid": 0} {
		if got, _ := ParseRate(in); got != want {
			t.Errorf("ParseRate(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestHostGPUWithoutNUMANode: a GPU sysfs gives no NUMA node (-1) is judged
// by its best binding, not left without a verdict.
func TestHostGPUWithoutNUMANode(t *testing.T) {
	info := hgxH100()
	info.GPUs[2].NUMA = -1
	o := healthy(info)
	o.HostToDevice[0][2], o.HostToDevice[1][2] = 30, 54
	h := Judge(loadKB(t), info, o, nil, []Layer{LayerHostGPU})
	var got []string
	for _, m := range h.Layers {
		if m.Device == "GPU 2" && strings.HasPrefix(m.Test, "host_to_device") {
			got = append(got, fmt.Sprintf("%s %.0f %s", m.Test, *m.MeasuredGBps, m.Verdict))
		}
	}
	want := []string{"host_to_device (NUMA node 1, the best; sysfs gives the GPU none) 54 ok"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
