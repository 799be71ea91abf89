package bench

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/spec"
)

// flaggedDev is what a test checks of an Outlier.
type flaggedDev struct {
	Host, Device, BusID string
	Layer               Layer
	Metric, Scope       string
}

// TestPeerOutliers feeds three HGX H100 hosts' measurements through
// peerValues and peerOutliers, the way Run does after the hosts are
// benched.
func TestPeerOutliers(t *testing.T) {
	tests := map[string]struct {
		// change alters host c's info and observations.
		change func(h *HostInfo, o *Observations)
		// verify is the node block's verify block; nil for none.
		verify *spec.Verify
		layers []Layer
		want   []flaggedDev
	}{
		"all healthy": {},
		"GPU 5's host copies at half": {
			change: func(h *HostInfo, o *Observations) {
				o.HostToDevice[1][5], o.DeviceToHost[1][5] = 27.7, 27.6
			},
			want: []flaggedDev{
				{"c", "GPU 5", "0000:68:00.0", LayerHostGPU, "device_to_host", "node"},
				{"c", "GPU 5", "0000:68:00.0", LayerHostGPU, "host_to_device", "node"},
			},
		},
		"a slow contrast run is not compared": {
			// The other NUMA node is slow on purpose; only the GPU's own
			// binding says anything about the GPU.
			change: func(h *HostInfo, o *Observations) { o.HostToDevice[0][5] = 10 },
		},
		"GPU without a NUMA node: its best binding": {
			change: func(h *HostInfo, o *Observations) {
				h.GPUs[2].NUMA = -1
				o.HostToDevice[0][2], o.HostToDevice[1][2] = 20, 30
			},
			want: []flaggedDev{{"c", "GPU 2", "0000:38:00.0", LayerHostGPU, "host_to_device", "node"}},
		},
		"slow HBM": {
			change: func(h *HostInfo, o *Observations) { o.HBM[3] = 1200 },
			want:   []flaggedDev{{"c", "GPU 3", "0000:48:00.0", LayerHBM, "device_local_copy", "node"}},
		},
		"slow NIC: named, no bus id": {
			change: func(h *HostInfo, o *Observations) { o.NICs["mlx5_3"] = 24.4 },
			want:   []flaggedDev{{"c", "mlx5_3", "", LayerNetwork, "rdma_write", "node"}},
		},
		"NIC linked at half rate is compared with the rate it should run at": {
			change: func(h *HostInfo, o *Observations) {
				h.NICs[3].RateGbps, h.NICs[3].RateText = 200, "200 Gb/sec (4X HDR)"
				o.NICs["mlx5_3"] = 24.4
			},
			want: []flaggedDev{{"c", "mlx5_3", "", LayerNetwork, "rdma_write", "node"}},
		},
		"a whole node slower than the fleet": {
			change: func(h *HostInfo, o *Observations) {
				for i := range 8 {
					o.HBM[i] = 1300
				}
			},
			want: func() []flaggedDev {
				var out []flaggedDev
				for i, g := range hgxH100().GPUs {
					out = append(out, flaggedDev{"c", fmt.Sprintf("GPU %d", i), g.Address, LayerHBM, "device_local_copy", "fleet"})
				}
				return out
			}(),
		},
		"within the spec's margin": {
			change: func(h *HostInfo, o *Observations) { o.HostToDevice[1][5] = 27.7 },
			verify: &spec.Verify{OutlierMarginPercent: spec.Attr[float64]{V: 60, Set: true}},
		},
		"outliers off": {
			change: func(h *HostInfo, o *Observations) { o.HostToDevice[1][5] = 27.7 },
			verify: &spec.Verify{Outliers: spec.Attr[spec.Outliers]{V: spec.OutliersOff, Set: true}},
		},
		"layers not asked for are not compared": {
			change: func(h *HostInfo, o *Observations) { o.HostToDevice[1][5] = 27.7 },
			layers: []Layer{LayerHBM},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			layers := tt.layers
			if layers == nil {
				layers = Layers()
			}
			node := &spec.Node{Name: "group", Verify: tt.verify}
			var targets []target.Host
			values := map[string][]PeerValue{}
			for _, name := range []string{"a", "b", "c"} {
				info := hgxH100()
				info.Name = name
				obs := healthy(info)
				if name == "c" && tt.change != nil {
					tt.change(&info, &obs)
				}
				targets = append(targets, target.Host{Host: spec.Host{Name: name}, Node: node})
				values[name] = peerValuesOf(info, obs, layers)
			}
			var got []flaggedDev
			for _, o := range peerOutliers(targets, values) {
				got = append(got, flaggedDev{o.Host, o.Device, o.BusID, o.Layer, o.Metric, string(o.Scope)})
				if o.PercentBelow <= o.MarginPercent || o.Value >= o.Median || o.Peers < 3 {
					t.Errorf("%+v is not below its peers by more than the margin", o)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outliers (-want +got):\n%s", diff)
			}
		})
	}
}
