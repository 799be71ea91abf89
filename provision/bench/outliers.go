package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/outlier"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/spec"
)

// Outlier is a device more than the margin below the median of its peers
// — the same GPU model (or NICs of the same link layer and rate) in its
// node or across the hosts benched — while it may still reach its own
// expectation. It is a warning: it changes no exit status.
type Outlier struct {
	// Host is the inventory name.
	Host string `json:"host"`
	// Device is the report's name of the device: "GPU 5", "mlx5_3".
	Device string `json:"device"`
	// BusID is the GPU's PCI address; "" for a NIC (its name is its id).
	BusID string `json:"bus_id,omitempty"`
	// Model is what makes devices peers: the GPU model, or a NIC's link
	// layer and the rate it should run at.
	Model string `json:"model"`
	// Layer is the layer measured.
	Layer Layer `json:"layer"`
	// Metric is the test: "device_local_copy", "host_to_device",
	// "device_to_host" (bound to the GPU's own NUMA node), "rdma_write".
	Metric string `json:"metric"`
	// Value is the device's measurement in GB/s.
	Value float64 `json:"value"`
	// Median is the median of its peers, itself included, in GB/s.
	Median float64 `json:"median"`
	// PercentBelow is (median - value) / median × 100.
	PercentBelow float64 `json:"percent_below"`
	// Peers is the number of devices compared, itself included.
	Peers int `json:"peers"`
	// Scope says which peers: "node" (its host's) or "fleet" (every host
	// benched). A device off in both is reported once, against its node.
	Scope outlier.Scope `json:"scope"`
	// MarginPercent is the margin applied: the node block's verify {
	// outlier_margin_percent }, default 10.
	MarginPercent float64 `json:"margin_percent"`
}

// PeerValue is one measurement as outlier.Flag compares it, with the
// report's name of its device. An engine that benches each host on its
// own node carries them back beside the host (NodeResult).
type PeerValue struct {
	outlier.Value
	Label string `json:"label"`
}

// peerValues are a host's per-device measurements that peers should
// share: HBM copies, host↔device copies bound to the GPU's own NUMA node
// (the judged binding: the contrast runs are slow on purpose), and RDMA
// writes per NIC. GPUs are named by bus id so a finding says which board
// to pull. Peer copies are left out: their per-pair values depend on the
// topology (NVLink, PCIe switch, socket) more than on the GPU.
func peerValuesOf(info HostInfo, obs Observations, layers []Layer) []PeerValue {
	var out []PeerValue
	add := func(l Layer, test, device, label, model string, v float64) {
		if v <= 0 {
			return
		}
		out = append(out, PeerValue{Value: outlier.Value{Host: info.Name, Device: device, Model: model,
			Metric: string(l) + "." + test, V: v, HigherIsBetter: true}, Label: label})
	}
	gpuModel := func(g GPU) string {
		if g.Model != "" {
			return g.Model
		}
		return "PCI device " + g.DeviceID
	}
	for _, g := range info.GPUs {
		label := fmt.Sprintf("GPU %d", g.Index)
		if slices.Contains(layers, LayerHBM) {
			if v, ok := obs.HBM[g.Index]; ok {
				add(LayerHBM, "device_local_copy", g.Address, label, gpuModel(g), v)
			}
		}
		if slices.Contains(layers, LayerHostGPU) {
			for _, dir := range []struct {
				test string
				by   map[int]map[int]float64
			}{{"host_to_device", obs.HostToDevice}, {"device_to_host", obs.DeviceToHost}} {
				if v, ok := ownNUMA(info, g, dir.by); ok {
					add(LayerHostGPU, dir.test, g.Address, label, gpuModel(g), v)
				}
			}
		}
	}
	if slices.Contains(layers, LayerNetwork) {
		for _, n := range info.NICs {
			if v, ok := obs.NICs[n.Name]; ok {
				model := n.LinkLayer
				if r := info.PeerRate(n); r > 0 {
					model = strings.TrimSpace(fmt.Sprintf("%s %g Gb/s", n.LinkLayer, r))
				}
				add(LayerNetwork, "rdma_write", n.Name, n.Name, model, v)
			}
		}
	}
	return out
}

// ownNUMA is a GPU's copy bandwidth bound to its own NUMA node, or to
// the best node when sysfs gives it none (as hostGPU judges it).
func ownNUMA(info HostInfo, g GPU, by map[int]map[int]float64) (float64, bool) {
	if _, known := info.NUMA[g.NUMA]; known || len(info.NUMA) == 0 {
		v, ok := by[g.NUMA][g.Index]
		return v, ok
	}
	best, ok := 0.0, false
	for _, id := range info.NUMAIDs() {
		if v, has := by[id][g.Index]; has && v > best {
			best, ok = v, true
		}
	}
	return best, ok
}

// peerOutliers compares the devices of every host benched with their
// peers, with each node block's verify { outliers, outlier_margin_percent
// } (the setting verify uses: one spec line tunes both); a node with
// outliers = "off" is left out. values are per host name.
func peerOutliers(targets []target.Host, values map[string][]PeerValue) []Outlier {
	byMargin := map[float64][]outlier.Value{}
	var margins []float64
	label := map[[2]string]string{}
	done := map[string]bool{}
	for _, tg := range targets {
		name := tg.Host.Name
		if done[name] {
			continue
		}
		done[name] = true
		mode, margin := verify.OutlierSettings(tg.Node)
		if mode == spec.OutliersOff {
			continue
		}
		if _, ok := byMargin[margin]; !ok {
			margins = append(margins, margin)
		}
		for _, v := range values[name] {
			byMargin[margin] = append(byMargin[margin], v.Value)
			label[[2]string{name, v.Device}] = v.Label
		}
	}
	slices.Sort(margins)
	var out []Outlier
	for _, m := range margins {
		for _, f := range outlier.Once(outlier.Flag(byMargin[m], m)) {
			layer, test, _ := strings.Cut(f.Metric, ".")
			o := Outlier{Host: f.Host, Device: label[[2]string{f.Host, f.Device}], Model: f.Model, Layer: Layer(layer), Metric: test,
				Value: f.V, Median: f.Median, PercentBelow: 100 * f.Worse, Peers: f.Peers, Scope: f.Scope, MarginPercent: 100 * m}
			if o.Layer != LayerNetwork {
				o.BusID = f.Device
			}
			out = append(out, o)
		}
	}
	return out
}
