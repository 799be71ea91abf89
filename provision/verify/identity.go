package verify

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/internal/spelling"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// gpuIdentity ties the spec's GPU indexes to the GPUs NVML enumerates by
// PCI bus id. NVML numbers the GPUs it can see: when one falls off the
// bus, every GPU after it moves down one index, so a spec's gpu4 (the
// hardware block's 0000:9d:00.0) would be judged on the GPU at c3, and
// that GPU's NIC pairing would fail for a fault it does not have. With
// the spec's bus ids the checks follow the hardware, and the GPU that is
// gone is named by its address.
type gpuIdentity struct {
	// nvmlIndex maps a spec index to NVML's index of the same GPU.
	nvmlIndex map[int]int
	// missing maps the spec index of each declared GPU NVML does not
	// enumerate to its bus id.
	missing map[int]string
}

// identify returns rep with every GPU index (the GPUs', their topology
// pairs', NIC pairs', processes' and XID events') replaced by the spec's
// index of the GPU at that PCI address, and the identity it used. A spec
// without bus ids (no hardware block, or one that gives no pci) leaves
// NVML's numbering, as before: then rep is returned unchanged.
func identify(exp Expectation, rep *nvmlfacts.Report) (*nvmlfacts.Report, gpuIdentity) {
	id := gpuIdentity{nvmlIndex: map[int]int{}, missing: map[int]string{}}
	if rep == nil || len(exp.GPUBusID) == 0 {
		return rep, id
	}
	byBus := map[string]int{}
	for idx, bus := range exp.GPUBusID {
		byBus[bus] = idx
	}
	remap := map[int]int{}
	claimed := map[int]bool{}
	var strangers []int
	for _, g := range rep.GPUs {
		bus, err := nvmlfacts.NormalizeBusID(g.BusID)
		if idx, ok := byBus[bus]; err == nil && ok {
			remap[g.Index] = idx
			claimed[idx] = true
			continue
		}
		strangers = append(strangers, g.Index)
	}
	for idx, bus := range exp.GPUBusID {
		if !claimed[idx] {
			id.missing[idx] = bus
		}
	}
	// A GPU at an address the hardware block does not declare keeps
	// NVML's index when the spec declares no GPU at that index, else takes
	// the next index the spec does not use: it is still judged, under a
	// name of its own, and never under a missing GPU's.
	taken := func(n int) bool { _, declared := exp.GPUBusID[n]; return declared || claimed[n] }
	next := 0
	for _, i := range strangers {
		n := i
		for taken(n) {
			for taken(next) {
				next++
			}
			n = next
		}
		remap[i] = n
		claimed[n] = true
	}
	out := *rep
	out.GPUs = slices.Clone(rep.GPUs)
	for i := range out.GPUs {
		spec := remap[out.GPUs[i].Index]
		id.nvmlIndex[spec] = out.GPUs[i].Index
		out.GPUs[i].Index = spec
	}
	at := func(i int) int {
		if n, ok := remap[i]; ok {
			return n
		}
		return i
	}
	out.GPUTopology = slices.Clone(rep.GPUTopology)
	for i := range out.GPUTopology {
		out.GPUTopology[i].A, out.GPUTopology[i].B = at(out.GPUTopology[i].A), at(out.GPUTopology[i].B)
	}
	out.NICTopology = slices.Clone(rep.NICTopology)
	for i := range out.NICTopology {
		out.NICTopology[i].GPU = at(out.NICTopology[i].GPU)
	}
	if rep.Processes != nil {
		p := *rep.Processes
		p.List = slices.Clone(p.List)
		for i := range p.List {
			p.List[i].GPU = at(p.List[i].GPU)
		}
		out.Processes = &p
	}
	if rep.XID != nil {
		x := *rep.XID
		x.Events = slices.Clone(x.Events)
		for i := range x.Events {
			if x.Events[i].GPU >= 0 {
				x.Events[i].GPU = at(x.Events[i].GPU)
			}
		}
		out.XID = &x
	}
	return &out, id
}

// missingText names the declared GPUs NVML does not see, by index and bus
// id: "gpu4 (0000:9d:00.0)".
func (id gpuIdentity) missingText() string {
	var s []string
	for _, idx := range slices.Sorted(maps.Keys(id.missing)) {
		s = append(s, fmt.Sprintf("gpu%d (%s)", idx, spelling.BusID(id.missing[idx])))
	}
	return strings.Join(s, ", ")
}

// absent says why a per-GPU check of a GPU NVML does not enumerate was not
// run, naming its bus id when the spec gives one.
func (id gpuIdentity) absent(idx int) string {
	if bus, ok := id.missing[idx]; ok {
		return fmt.Sprintf("not run: gpu%d (%s) is not enumerated by NVML (see nvml.gpu_count)", idx, spelling.BusID(bus))
	}
	return fmt.Sprintf("gpu%d not present (see nvml.gpu_count)", idx)
}
