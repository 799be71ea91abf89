package bench

import (
	"fmt"
	"slices"
	"strings"
)

// Layer is one of the five bandwidth layers data crosses on its way to a
// GPU, as `-layers` and the JSON name them.
type Layer string

// The layers, in the order data meets them from the GPU outwards.
const (
	// LayerHBM is device memory bandwidth per GPU.
	LayerHBM Layer = "hbm"
	// LayerGPUGPU is peer copies between GPU pairs and single-node
	// all_reduce bus bandwidth.
	LayerGPUGPU Layer = "gpu_gpu"
	// LayerHostGPU is host↔device copies per GPU, under a NUMA binding.
	LayerHostGPU Layer = "host_gpu"
	// LayerNetwork is RDMA write bandwidth per NIC.
	LayerNetwork Layer = "network"
	// LayerStorage is sequential fio throughput on the spec's paths.
	LayerStorage Layer = "storage"
)

// Layers lists every layer in order.
func Layers() []Layer {
	return []Layer{LayerHBM, LayerGPUGPU, LayerHostGPU, LayerNetwork, LayerStorage}
}

// ParseLayers reads the -layers flag's words (comma lists allowed); an
// empty list means every layer.
func ParseLayers(words []string) ([]Layer, error) {
	var out []Layer
	for _, w := range words {
		for _, f := range strings.Split(w, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			l := Layer(f)
			if !slices.Contains(Layers(), l) {
				names := make([]string, len(Layers()))
				for i, l := range Layers() {
					names[i] = string(l)
				}
				return nil, fmt.Errorf("-layers: unknown layer %q (layers: %s)", f, strings.Join(names, ", "))
			}
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	if len(out) == 0 {
		return Layers(), nil
	}
	return out, nil
}

// Verdict is how a measurement compares with its expectation.
type Verdict string

const (
	// VerdictOK: at or above the share of the expectation a healthy
	// device reaches (see OKFraction).
	VerdictOK Verdict = "ok"
	// VerdictBelow: below that share.
	VerdictBelow Verdict = "below"
	// VerdictContrast: measured on purpose under a wrong placement (the
	// other NUMA node), to show what that costs; never judged.
	VerdictContrast Verdict = "contrast"
	// VerdictNoExpectation: measured, but nothing says what it should be
	// (a model without a published figure, storage without a floor).
	VerdictNoExpectation Verdict = "no_expectation"
	// VerdictNotMeasured: the tool is missing or failed; never a pass.
	VerdictNotMeasured Verdict = "not_measured"
)

// Kind says what an expected figure is.
type Kind string

const (
	// KindPeak is the most the hardware can carry (a datasheet figure, a
	// link rate).
	KindPeak Kind = "peak"
	// KindAchievable is what a public measurement reached on healthy
	// hardware.
	KindAchievable Kind = "achievable"
	// KindFloor is a minimum the spec sets.
	KindFloor Kind = "floor"
)

// OKFraction is the share of an expected figure a healthy device reaches.
// Copies and RDMA writes lose a part of a peak to protocol overhead (PCIe
// packet headers, HBM refresh, link-layer framing): DCGM's SKU files set
// their memory-bandwidth floors near 0.75 of measured values, and a link
// trained at half its width or rate lands near 0.5, so 0.7 separates the
// two. An achievable figure was reached by someone, so most of it is
// expected; a floor is the spec's own and is met or not.
func OKFraction(k Kind) float64 {
	switch k {
	case KindAchievable:
		return 0.85
	case KindFloor:
		return 1
	}
	return 0.7
}

// Expected is what a measurement should reach and where the figure comes
// from.
type Expected struct {
	// GBps is the figure in GB/s (10^9 bytes per second).
	GBps float64
	// Kind says whether it is a peak, an achievable figure or a floor.
	Kind Kind
	// Source is the public source (a URL), the sysfs file, or the spec
	// attribute the figure comes from.
	Source string
	// FactStatus is the knowledge base's status of the figure
	// (confirmed, derived, secondary, unconfirmed), "" for sysfs and spec.
	FactStatus string
	// Why says how the figure was derived, for the report.
	Why string
}

// Measurement is one row of a host's report.
type Measurement struct {
	// Layer is the layer measured.
	Layer Layer `json:"name"`
	// Device is what was measured: "GPU 5", "GPU 0 -> GPU 1", "mlx5_0",
	// "all_reduce 8 GPUs", a storage block's name.
	Device string `json:"device"`
	// Test says which transfer: "device_local_copy", "host_to_device",
	// "host_to_device (NUMA node 1, not the GPU's)", "rdma_write", "read".
	Test string `json:"test"`
	// MeasuredGBps is the measured bandwidth in GB/s; nil when not
	// measured.
	MeasuredGBps *float64 `json:"measured_gbps"`
	// ExpectedGBps is the expectation in GB/s; nil when none is known.
	ExpectedGBps *float64 `json:"expected_gbps"`
	// Source is where the expectation comes from.
	Source string `json:"source,omitempty"`
	// Status is the kind of the expectation: peak, achievable or floor.
	Status Kind `json:"status,omitempty"`
	// FactStatus is the knowledge base's status of the expectation.
	FactStatus string `json:"fact_status,omitempty"`
	// Percent is measured / expected × 100; nil without both.
	Percent *float64 `json:"percent"`
	// Verdict is the judgement.
	Verdict Verdict `json:"verdict"`
	// Install names the package that provides the missing tool, when
	// Verdict is not_measured for that reason.
	Install string `json:"install,omitempty"`
	// Note explains the expectation or why nothing was measured.
	Note string `json:"note,omitempty"`
}

// ScalePoint is one point of the scaling curve.
type ScalePoint struct {
	// GPUs is the number of GPUs in the run (all nodes together).
	GPUs int `json:"gpus"`
	// Nodes is the number of nodes the run spans.
	Nodes int `json:"nodes"`
	// BusBWGBps is nccl-tests' all_reduce bus bandwidth; nil when not
	// measured (one GPU has none).
	BusBWGBps *float64 `json:"busbw_gbps"`
	// ExpectedBusBWGBps is what the links should carry at this count.
	ExpectedBusBWGBps *float64 `json:"expected_busbw_gbps,omitempty"`
	// Throughput is the workload's throughput (the spec's bench command),
	// in its own unit; nil when no workload ran.
	Throughput *float64 `json:"throughput,omitempty"`
	// Efficiency is T(n) / (n × T(1)) for the workload; without one, the
	// bus bandwidth as a share of the expectation. nil when neither is
	// known.
	Efficiency *float64 `json:"efficiency"`
	// EfficiencyOf says which: "workload" or "busbw".
	EfficiencyOf string `json:"efficiency_of,omitempty"`
}

// Finding is a measurement below expectation, as the diagnosis names it.
type Finding struct {
	// Layer is the layer.
	Layer Layer `json:"layer"`
	// Device is the measurement's device.
	Device string `json:"device"`
	// Percent is measured / expected × 100.
	Percent float64 `json:"percent"`
	// Message says what was found and why it matters.
	Message string `json:"message"`
	// Fix is the spec setting or hardware fact that would fix it, when
	// gpuform knows one.
	Fix string `json:"fix,omitempty"`
}

// Bottleneck is the diagnosis of a host: the layer and device furthest
// below expectation, and the other findings below it.
type Bottleneck struct {
	Finding
	// Reasoning says how the scaling curve points at the layer (single
	// node drops: NVLink, PCIe, NUMA; only multi-node: network).
	Reasoning string `json:"reasoning,omitempty"`
	// Also are the other measurements below expectation, worst first.
	Also []Finding `json:"also,omitempty"`
}

// Host is one host's report.
type Host struct {
	// Host is the inventory name.
	Host string `json:"host"`
	// Model is the GPU model of the knowledge base, "" when unknown.
	Model string `json:"gpu_model,omitempty"`
	// GPUs is the number of GPUs found.
	GPUs int `json:"gpus"`
	// Binding says how host_gpu was bound to a NUMA node (numactl or
	// taskset), "" when not measured.
	Binding string `json:"numa_binding,omitempty"`
	// Layers are the measurements in layer order.
	Layers []Measurement `json:"layers"`
	// Scaling is the scaling curve.
	Scaling []ScalePoint `json:"scaling"`
	// Bottleneck is nil when nothing is below expectation.
	Bottleneck *Bottleneck `json:"bottleneck"`
	// WorkloadError is why the spec's bench command gave no throughput,
	// "" when it did or when there is none.
	WorkloadError string `json:"workload_error,omitempty"`
	// Error is why the host could not be benched at all.
	Error string `json:"error,omitempty"`
	// DurationMS is how long the host took.
	DurationMS int64 `json:"duration_ms"`
}

// Report is bench's result over all hosts.
type Report struct {
	// FormatVersion is jsonformat.Version.
	FormatVersion string `json:"format_version"`
	// Layers are the layers asked for.
	Layers []Layer `json:"layers_requested"`
	// Hosts are in spec order.
	Hosts []Host `json:"hosts"`
	// Outliers are devices more than the margin below their peers, by
	// host and device; empty when none. They are warnings: OK ignores
	// them.
	Outliers []Outlier `json:"outliers"`
}

// OK reports whether every host was benched, every layer asked for was
// measured, and no host has a bottleneck: a layer that could not be
// measured is never a pass. Peer outliers are warnings and do not count.
func (r *Report) OK() bool {
	for _, h := range r.Hosts {
		if h.Error != "" || h.Bottleneck != nil || h.WorkloadError != "" {
			return false
		}
		for _, m := range h.Layers {
			if m.Verdict == VerdictNotMeasured {
				return false
			}
		}
	}
	return true
}

func ptr(v float64) *float64 { return &v }
