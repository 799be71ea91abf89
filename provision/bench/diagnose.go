package bench

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/spelling"
)

// ScalingOK is the scaling efficiency below which a curve is said to
// drop: a workload at 8 GPUs doing less than 80% of 8 × its one-GPU
// throughput is losing a fifth of the added GPUs.
const ScalingOK = 0.8

// Diagnose names the bottleneck of a judged host: the measurement
// furthest below its expectation, chosen the way the standard method
// reads the scaling curve — when single-node scaling already drops, the
// cause is inside the node (NVLink, PCIe, NUMA: the hbm, gpu_gpu and
// host_gpu layers); when only multi-node scaling drops, it is the
// network. nil when nothing is below expectation.
func Diagnose(info HostInfo, h Host) *Bottleneck {
	var inside, network, other []Finding
	for _, m := range h.Layers {
		if m.Verdict != VerdictBelow || m.Percent == nil {
			continue
		}
		f := findingFor(info, h.Layers, m)
		switch m.Layer {
		case LayerHBM, LayerGPUGPU, LayerHostGPU:
			inside = append(inside, f)
		case LayerNetwork:
			network = append(network, f)
		default:
			other = append(other, f)
		}
	}
	single, singleAt, multi, multiAt := drops(h.Scaling)
	worst := func(fs []Finding) []Finding {
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].Percent < fs[j].Percent })
		return fs
	}
	inside, network, other = worst(inside), worst(network), worst(other)

	var b Bottleneck
	var first []Finding
	switch {
	case single != nil:
		b.Reasoning = fmt.Sprintf("single-node scaling already drops (efficiency %.2f at %d GPUs): the cause is inside the node — NVLink, PCIe or NUMA", *single, singleAt)
		first = inside
	case multi != nil:
		b.Reasoning = fmt.Sprintf("single-node scaling holds and multi-node drops (efficiency %.2f at %d nodes): the network", *multi, multiAt)
		first = network
	}
	all := worst(append(append(append([]Finding(nil), inside...), network...), other...))
	if len(first) == 0 {
		first = all
	}
	if len(first) == 0 {
		if b.Reasoning == "" {
			return nil
		}
		// The curve drops but no layer measured below expectation: say
		// so rather than invent a culprit.
		b.Layer = LayerGPUGPU
		if multi != nil && single == nil {
			b.Layer = LayerNetwork
		}
		b.Message = "scaling drops but no measured layer is below its expectation; measure the missing layers or the workload's own communication"
		return &b
	}
	b.Finding = first[0]
	if b.Reasoning == "" {
		b.Reasoning = "the layer furthest below what its hardware should carry"
	}
	// One finding per device: a GPU slow both ways is one finding.
	seen := map[string]bool{string(b.Layer) + "\x00" + b.Device: true}
	for _, f := range all {
		key := string(f.Layer) + "\x00" + f.Device
		if seen[key] {
			continue
		}
		seen[key] = true
		b.Also = append(b.Also, f)
	}
	return &b
}

// drops returns the lowest single-node and multi-node efficiencies below
// ScalingOK (nil when none) and where they are.
func drops(points []ScalePoint) (single *float64, singleAt int, multi *float64, multiAt int) {
	for _, p := range points {
		if p.Efficiency == nil || *p.Efficiency >= ScalingOK {
			continue
		}
		// A bus bandwidth below its expectation is a layer finding
		// already; the curve's reasoning rests on the workload and on
		// multi-node runs.
		if p.Nodes <= 1 && p.EfficiencyOf == "workload" {
			if single == nil || *p.Efficiency < *single {
				single, singleAt = p.Efficiency, p.GPUs
			}
		}
		if p.Nodes > 1 {
			if multi == nil || *p.Efficiency < *multi {
				multi, multiAt = p.Efficiency, p.Nodes
			}
		}
	}
	return single, singleAt, multi, multiAt
}

// findingFor explains one measurement below expectation and names the
// fix gpuform knows for it.
func findingFor(info HostInfo, all []Measurement, m Measurement) Finding {
	f := Finding{Layer: m.Layer, Device: m.Device, Percent: *m.Percent}
	what := fmt.Sprintf("%s %s: %.1f GB/s, %.0f%% of the expected %.1f GB/s (%s)", m.Device, m.Test, *m.MeasuredGBps, *m.Percent, *m.ExpectedGBps, m.Status)
	switch m.Layer {
	case LayerHostGPU:
		g := gpuOf(info, m.Device)
		switch {
		case g != nil && g.Width > 0 && g.MaxWidth > 0 && g.Width < g.MaxWidth:
			f.Message = what + fmt.Sprintf("; its PCIe link trained at x%d of x%d", g.Width, g.MaxWidth)
			f.Fix = fmt.Sprintf("GPU %d (%s) trained its PCIe link at x%d of its x%d: reseat the GPU or check its slot, riser and cable; verify { nvml { min_pcie_width = %d } } fails such a host", g.Index, spelling.BusID(g.Address), g.Width, g.MaxWidth, g.MaxWidth)
		case g != nil && g.MaxGen > 0 && g.Gen > 0 && g.Gen < g.MaxGen:
			// sysfs was read when the host was probed, when an idle GPU
			// has lowered its generation to save power: the low
			// generation is a lead only because the copy was slow too.
			f.Message = what + fmt.Sprintf("; its PCIe link read Gen%d of Gen%d when probed", g.Gen, g.MaxGen)
			f.Fix = fmt.Sprintf("GPU %d (%s) copies slowly and its PCIe link read Gen%d of Gen%d when probed (an idle GPU lowers its generation, so read it under load: nvidia-smi -q -d PCIE during a copy); if it stays below Gen%d, check the slot and BIOS PCIe settings; verify { nvml { min_pcie_gen = %d } } fails such a host", g.Index, spelling.BusID(g.Address), g.Gen, g.MaxGen, g.MaxGen, g.MaxGen)
		case g != nil && strings.Contains(m.Test, "the spec's bind"):
			f.Message = what + fmt.Sprintf("; the spec binds it to NUMA node %d, sysfs puts it on node %d", info.SpecBind[g.Index], g.NUMA)
			dir, _, _ := strings.Cut(m.Test, " (")
			for _, o := range all {
				if o.Device == m.Device && strings.HasPrefix(o.Test, dir+" (") && strings.Contains(o.Test, "the GPU's)") && o.MeasuredGBps != nil && *o.MeasuredGBps > 0 {
					f.Message += fmt.Sprintf(", where it measures %.1f GB/s: the spec's binding costs %.0f%%", *o.MeasuredGBps, (1 - *m.MeasuredGBps / *o.MeasuredGBps)*100)
				}
			}
			f.Fix = fmt.Sprintf("bind GPU %d to its own NUMA node: numa { bind { gpus = [%d] node = %d } }", g.Index, g.Index, g.NUMA)
		case g != nil:
			f.Message = what
			if _, bound := info.SpecBind[g.Index]; !bound {
				f.Fix = fmt.Sprintf("bind jobs on GPU %d to NUMA node %d (numa { bind { gpus = [%d] node = %d } } and `gpuform bind`)", g.Index, g.NUMA, g.Index, g.NUMA)
			}
		default:
			f.Message = what
		}
	case LayerNetwork:
		f.Message = what
		for _, n := range info.NICs {
			if n.Name != m.Device {
				continue
			}
			if peer := info.PeerRate(n); peer > n.RateGbps {
				f.Fix = fmt.Sprintf("%s's link is up at %q while the node's other %s ports run %g Gb/s: check its cable, transceiver and switch port", n.Name, n.RateText, n.LinkLayer, peer)
			} else if len(info.Pairing) == 0 {
				f.Fix = "pair each GPU with the NIC on its PCIe switch (affinity { gpu_nic }) so NCCL spreads traffic over every NIC"
			}
		}
		if strings.HasPrefix(m.Device, "all_reduce") {
			f.Fix = "compare the per-NIC rows: a slow or missing NIC, a GPU–NIC pairing across sockets (affinity { gpu_nic }), or NCCL on TCP instead of RDMA (verify's nccl_test network)"
		}
	case LayerGPUGPU:
		f.Message = what
		f.Fix = "check NVLink state and errors (gpuform verify: nvlink = \"all_active\") and Fabric Manager on NVSwitch boards"
	case LayerHBM:
		f.Message = what
		f.Fix = "check clocks, throttling and row remapping (gpuform verify)"
	default:
		f.Message = what
	}
	return f
}

func gpuOf(info HostInfo, device string) *GPU {
	rest, ok := strings.CutPrefix(device, "GPU ")
	if !ok {
		return nil
	}
	i, err := strconv.Atoi(strings.Fields(rest)[0])
	if err != nil || i < 0 || i >= len(info.GPUs) {
		return nil
	}
	return &info.GPUs[i]
}
