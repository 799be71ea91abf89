package bench

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
)

// Pair is an ordered GPU pair: a copy from Src to Dst.
type Pair struct{ Src, Dst int }

// FioResult is one storage path's sequential throughput in GB/s.
type FioResult struct {
	// ReadGBps and WriteGBps are nil when that direction did not run.
	ReadGBps, WriteGBps *float64
}

// Missing says why a layer was not measured.
type Missing struct {
	// Tool is the program that was missing or failed.
	Tool string
	// Package is what to install for it; "" when the tool ran and failed.
	Package string
	// Reason is a one-line explanation.
	Reason string
}

// Observations are what the tools measured on one host, in GB/s, before
// any judgement. Collect fills them over a transport; tests write them.
type Observations struct {
	// HBM is device_local_copy per GPU index.
	HBM map[int]float64
	// Peer is device_to_device copy bandwidth per ordered pair.
	Peer map[Pair]float64
	// HostToDevice and DeviceToHost are per NUMA node bound, per GPU.
	HostToDevice, DeviceToHost map[int]map[int]float64
	// AllReduce is single-node all_reduce bus bandwidth per GPU count.
	AllReduce map[int]float64
	// MultiNode is all_reduce bus bandwidth across nodes, per node count
	// (the GPUs of each node all take part).
	MultiNode map[int]float64
	// NICs is RDMA write bandwidth per NIC name, in GB/s.
	NICs map[string]float64
	// Remote is RDMA write bandwidth per NIC name to the same rail of
	// the host's partner in its node group (node to node).
	Remote map[string]RemoteNIC
	// Storage is fio's throughput per spec storage block name.
	Storage map[string]FioResult
	// Workload is the spec command's throughput per GPU count.
	Workload map[int]float64
	// Missing says which layers (or the workload, key "workload") could
	// not be measured, and why.
	Missing map[string]Missing
	// Binding names the tool that bound host_gpu runs to a NUMA node.
	Binding string
}

// TestNodeToNode is the test of a network row measured between two nodes
// of a group, NIC to the same rail's NIC.
const TestNodeToNode = "rdma_write node to node"

// Judge compares a host's observations with what its hardware should
// carry and diagnoses the weakest layer. layers limits the report to
// those asked for; b is the node's bench block (nil for none).
func Judge(kb *kb.KB, info HostInfo, obs Observations, b *spec.Bench, layers []Layer) Host {
	h := Host{Host: info.Name, Model: info.Model(), GPUs: len(info.GPUs), Binding: obs.Binding}
	want := func(l Layer) bool { return slices.Contains(layers, l) }
	gpu := func(i int) GPU {
		if i >= 0 && i < len(info.GPUs) {
			return info.GPUs[i]
		}
		return GPU{Index: i, NUMA: -1}
	}
	add := func(m Measurement) { h.Layers = append(h.Layers, m) }

	if want(LayerHBM) {
		if miss, ok := obs.Missing[string(LayerHBM)]; ok {
			add(notMeasured(LayerHBM, "all GPUs", "device_local_copy", miss))
		}
		for _, i := range sortedKeys(obs.HBM) {
			e, ok := ExpectHBM(kb, gpu(i).Model)
			add(judge(LayerHBM, fmt.Sprintf("GPU %d", i), "device_local_copy", obs.HBM[i], e, ok))
		}
	}
	if want(LayerGPUGPU) {
		if miss, ok := obs.Missing[string(LayerGPUGPU)]; ok {
			add(notMeasured(LayerGPUGPU, "all GPUs", "device_to_device", miss))
		}
		pairs := make([]Pair, 0, len(obs.Peer))
		for p := range obs.Peer {
			pairs = append(pairs, p)
		}
		sort.Slice(pairs, func(i, j int) bool {
			if pairs[i].Src != pairs[j].Src {
				return pairs[i].Src < pairs[j].Src
			}
			return pairs[i].Dst < pairs[j].Dst
		})
		for _, p := range pairs {
			e, ok := ExpectPeer(kb, gpu(p.Src), gpu(p.Dst))
			add(judge(LayerGPUGPU, fmt.Sprintf("GPU %d -> GPU %d", p.Src, p.Dst), "device_to_device", obs.Peer[p], e, ok))
		}
		if miss, ok := obs.Missing["all_reduce"]; ok {
			add(notMeasured(LayerGPUGPU, "all_reduce", "busbw", miss))
		}
		// The single-node all_reduce at the most GPUs is a gpu_gpu row;
		// every count is a point of the scaling curve.
		if n := maxKey(obs.AllReduce); n >= 2 {
			e, ok := ExpectAllReduce(kb, h.Model, n)
			add(judge(LayerGPUGPU, fmt.Sprintf("all_reduce %d GPUs", n), "busbw", obs.AllReduce[n], e, ok))
		}
	}
	if want(LayerHostGPU) {
		if miss, ok := obs.Missing[string(LayerHostGPU)]; ok {
			add(notMeasured(LayerHostGPU, "all GPUs", "host_to_device", miss))
		}
		for i := range info.GPUs {
			h.Layers = append(h.Layers, hostGPU(kb, info, obs, info.GPUs[i])...)
		}
	}
	if want(LayerNetwork) {
		if miss, ok := obs.Missing[string(LayerNetwork)]; ok {
			add(notMeasured(LayerNetwork, "all NICs", "rdma_write", miss))
		}
		for _, n := range info.NICs {
			v, ok := obs.NICs[n.Name]
			if !ok {
				continue
			}
			e, eok := ExpectNIC(info, n)
			add(judge(LayerNetwork, n.Name, "rdma_write", v, e, eok))
		}
		for _, n := range info.NICs {
			r, ok := obs.Remote[n.Name]
			if !ok {
				continue
			}
			device := fmt.Sprintf("%s <-> %s %s", n.Name, r.Peer, r.PeerNIC)
			if r.Why != "" || r.GBps <= 0 {
				add(notMeasured(LayerNetwork, device, TestNodeToNode, Missing{Tool: "ib_write_bw", Reason: "ib_write_bw node to node failed: " + firstNonEmpty(r.Why, "no bandwidth in its output")}))
				continue
			}
			// Judged against this NIC's own link rate: a run goes at the
			// pace of the slower end, so a slow far NIC shows here too,
			// and the device names it.
			e, eok := ExpectNIC(info, n)
			add(judge(LayerNetwork, device, TestNodeToNode, r.GBps, e, eok))
		}
		if miss, ok := obs.Missing["multi_node"]; ok {
			add(notMeasured(LayerNetwork, "all_reduce across nodes", "busbw", miss))
		}
		if n := maxKey(obs.MultiNode); n >= 2 {
			e, ok := expectMultiNode(info, obs)
			add(judge(LayerNetwork, fmt.Sprintf("all_reduce %d nodes", n), "busbw", obs.MultiNode[n], e, ok))
		}
	}
	if want(LayerStorage) && b != nil {
		if miss, ok := obs.Missing[string(LayerStorage)]; ok {
			add(notMeasured(LayerStorage, "all paths", "fio", miss))
		}
		for _, s := range b.Storage {
			r, ok := obs.Storage[s.Name]
			if !ok {
				continue
			}
			for _, dir := range []struct {
				test  string
				v     *float64
				floor spec.Attr[float64]
				attr  string
			}{{"read", r.ReadGBps, s.MinReadGBps, "min_read_gbps"}, {"write", r.WriteGBps, s.MinWriteGBps, "min_write_gbps"}} {
				if dir.v == nil {
					continue
				}
				e := Expected{GBps: dir.floor.V, Kind: KindFloor, Source: fmt.Sprintf("spec: bench storage %q %s (%s)", s.Name, dir.attr, dir.floor.Range),
					Why: "the spec's floor"}
				m := judge(LayerStorage, s.Name+" "+s.Path.V, "sequential_"+dir.test, *dir.v, e, dir.floor.Set)
				if !dir.floor.Set {
					m.Note = "the spec gives no " + dir.attr + ": reported without a verdict"
				}
				add(m)
			}
		}
	}
	if miss, ok := obs.Missing["workload"]; ok {
		h.WorkloadError = miss.Reason
	}
	h.Scaling = scaling(kb, info, obs)
	h.Bottleneck = Diagnose(info, h)
	return h
}

// hostGPU judges one GPU's host↔device copies: bound to its own NUMA
// node (judged), to the spec's node when the spec binds it elsewhere
// (judged: that is where jobs will run), and to another node for
// contrast.
func hostGPU(kb *kb.KB, info HostInfo, obs Observations, g GPU) []Measurement {
	var out []Measurement
	e, eok := ExpectPCIe(kb, g)
	dev := fmt.Sprintf("GPU %d", g.Index)
	for _, dir := range []struct {
		test string
		by   map[int]map[int]float64
	}{{"host_to_device", obs.HostToDevice}, {"device_to_host", obs.DeviceToHost}} {
		if _, ok := info.NUMA[g.NUMA]; !ok && len(info.NUMA) > 0 {
			// sysfs gives the GPU no NUMA node (-1): judge its best
			// binding, since no run can be called the wrong one.
			best, at := 0.0, -1
			for _, id := range info.NUMAIDs() {
				if v, ok := dir.by[id][g.Index]; ok && v > best {
					best, at = v, id
				}
			}
			if at >= 0 {
				m := judge(LayerHostGPU, dev, fmt.Sprintf("%s (NUMA node %d, the best; sysfs gives the GPU none)", dir.test, at), best, e, eok)
				out = append(out, m)
			}
			continue
		}
		if v, ok := dir.by[g.NUMA][g.Index]; ok {
			m := judge(LayerHostGPU, dev, fmt.Sprintf("%s (NUMA node %d, the GPU's)", dir.test, g.NUMA), v, e, eok)
			if g.MaxWidth > 0 && g.Width > 0 && g.Width < g.MaxWidth {
				m.Note = joinNote(m.Note, fmt.Sprintf("link trained at x%d of x%d", g.Width, g.MaxWidth))
			}
			out = append(out, m)
		}
		if sb, ok := info.SpecBind[g.Index]; ok && sb != g.NUMA {
			if v, ok := dir.by[sb][g.Index]; ok {
				m := judge(LayerHostGPU, dev, fmt.Sprintf("%s (NUMA node %d, the spec's bind)", dir.test, sb), v, e, eok)
				m.Note = joinNote(m.Note, fmt.Sprintf("the spec binds GPU %d to NUMA node %d; sysfs puts it on node %d", g.Index, sb, g.NUMA))
				out = append(out, m)
			}
		}
		for _, other := range info.NUMAIDs() {
			if other == g.NUMA || other == info.SpecBind[g.Index] && hasKey(info.SpecBind, g.Index) {
				continue
			}
			v, ok := dir.by[other][g.Index]
			if !ok {
				continue
			}
			m := judge(LayerHostGPU, dev, fmt.Sprintf("%s (NUMA node %d, not the GPU's)", dir.test, other), v, e, eok)
			if m.Verdict == VerdictOK || m.Verdict == VerdictBelow {
				m.Verdict = VerdictContrast
			}
			if own, ok := dir.by[g.NUMA][g.Index]; ok && own > 0 {
				m.Note = joinNote(m.Note, fmt.Sprintf("a wrong NUMA binding costs %.0f%%", math.Max(0, (own-v)/own*100)))
			}
			out = append(out, m)
			break // one contrast is enough to show the cost
		}
	}
	return out
}

// scaling builds the scaling curve: single-node all_reduce at each GPU
// count, the workload's throughput where it ran, and multi-node points.
func scaling(kb *kb.KB, info HostInfo, obs Observations) []ScalePoint {
	model := info.Model()
	counts := map[int]bool{}
	for n := range obs.AllReduce {
		counts[n] = true
	}
	for n := range obs.Workload {
		counts[n] = true
	}
	var out []ScalePoint
	t1, hasT1 := obs.Workload[1]
	for _, n := range sortedKeys(counts) {
		p := ScalePoint{GPUs: n, Nodes: 1}
		if v, ok := obs.AllReduce[n]; ok && n > 1 {
			p.BusBWGBps = ptr(v)
			if e, ok := ExpectAllReduce(kb, model, n); ok {
				p.ExpectedBusBWGBps = ptr(e.GBps)
				p.Efficiency, p.EfficiencyOf = ptr(v/e.GBps), "busbw"
			}
		}
		if t, ok := obs.Workload[n]; ok {
			p.Throughput = ptr(t)
			if hasT1 && t1 > 0 {
				p.Efficiency, p.EfficiencyOf = ptr(t/(float64(n)*t1)), "workload"
			} else {
				p.Efficiency, p.EfficiencyOf = nil, ""
			}
		}
		out = append(out, p)
	}
	e, eok := expectMultiNode(info, obs)
	for _, nodes := range sortedKeys(obs.MultiNode) {
		p := ScalePoint{GPUs: nodes * len(info.GPUs), Nodes: nodes, BusBWGBps: ptr(obs.MultiNode[nodes])}
		if eok {
			p.ExpectedBusBWGBps = ptr(e.GBps)
			p.Efficiency, p.EfficiencyOf = ptr(obs.MultiNode[nodes]/e.GBps), "busbw"
		}
		out = append(out, p)
	}
	return out
}

func judge(l Layer, device, test string, measured float64, e Expected, ok bool) Measurement {
	m := Measurement{Layer: l, Device: device, Test: test, MeasuredGBps: ptr(measured), Verdict: VerdictNoExpectation}
	if !ok || e.GBps <= 0 {
		m.Note = "no published figure for this hardware in the knowledge base"
		return m
	}
	m.ExpectedGBps, m.Source, m.Status, m.FactStatus, m.Note = ptr(e.GBps), e.Source, e.Kind, e.FactStatus, e.Why
	m.Percent = ptr(measured / e.GBps * 100)
	if measured >= e.GBps*OKFraction(e.Kind) {
		m.Verdict = VerdictOK
	} else {
		m.Verdict = VerdictBelow
	}
	return m
}

func notMeasured(l Layer, device, test string, miss Missing) Measurement {
	m := Measurement{Layer: l, Device: device, Test: test, Verdict: VerdictNotMeasured, Install: miss.Package, Note: miss.Reason}
	if miss.Package != "" && m.Note == "" {
		m.Note = fmt.Sprintf("%s is not on the node's PATH: install the %s package", miss.Tool, miss.Package)
	}
	return m
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func hasKey[V any](m map[int]V, k int) bool { _, ok := m[k]; return ok }

func sortedKeys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func maxKey[V any](m map[int]V) int {
	best := 0
	for k := range m {
		if k > best {
			best = k
		}
	}
	return best
}

// expectMultiNode is what all_reduce bus bandwidth across nodes should
// reach: no more than the node's NICs carry together (the sum of their
// link rates, the compute fabric's link layer) nor than the same node
// reached alone.
func expectMultiNode(info HostInfo, obs Observations) (Expected, bool) {
	sum := 0.0
	layer := ""
	for _, n := range info.NICs {
		if layer == "" {
			layer = n.LinkLayer
		}
		if n.LinkLayer == layer {
			sum += info.PeerRate(n) / 8
		}
	}
	if sum == 0 {
		return Expected{}, false
	}
	e := Expected{GBps: sum, Kind: KindPeak, Source: "/sys/class/infiniband/*/ports/*/rate",
		Why: fmt.Sprintf("the node's %s NICs together (sum of link rates)", layer)}
	if single := obs.AllReduce[len(info.GPUs)]; single > 0 && single < sum {
		e.GBps, e.Source, e.Why = single, "measured", fmt.Sprintf("the same node's single-node all_reduce bus bandwidth on %d GPUs", len(info.GPUs))
	}
	return e, true
}
