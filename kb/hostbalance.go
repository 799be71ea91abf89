package kb

import (
	"fmt"
	"strconv"
)

// HostDesign is one of NVIDIA's own GPU server designs (host-designs.tsv):
// how many CPU cores, how much RAM and local NVMe it gives its GPUs.
type HostDesign struct {
	// Name names the system ("NVIDIA DGX H100 (8x H100-SXM-80GB)").
	Name string
	// GPUs is the number of GPUs.
	GPUs int
	// CPUCores is the physical core count over all sockets.
	CPUCores int
	// MemoryBytes is the host RAM.
	MemoryBytes uint64
	// NVMeBytes is the local NVMe capacity.
	NVMeBytes uint64
	Fact
}

// HostShare is the smallest per-GPU share of cores, RAM and NVMe among the
// host designs, each with the design it comes from: a node that gives its
// GPUs less than NVIDIA's own systems do is built leaner than any design
// NVIDIA ships for these GPUs. The numbers are derived from the designs'
// confirmed rows.
type HostShare struct {
	// CoresPerGPU is the fewest CPU cores per GPU.
	CoresPerGPU float64
	// CoresFrom is the design CoresPerGPU comes from.
	CoresFrom HostDesign
	// MemoryPerGPU is the least RAM per GPU, bytes.
	MemoryPerGPU uint64
	// MemoryFrom is the design MemoryPerGPU comes from.
	MemoryFrom HostDesign
	// NVMePerGPU is the least local NVMe per GPU, bytes.
	NVMePerGPU uint64
	// NVMeFrom is the design NVMePerGPU comes from.
	NVMeFrom HostDesign
}

// HostDesigns returns the rows of host-designs.tsv in file order.
func (kb *KB) HostDesigns() []HostDesign { return kb.hostDesigns }

// MinHostShare returns the smallest per-GPU shares over the host designs;
// ok=false when the table is empty.
func (kb *KB) MinHostShare() (HostShare, bool) {
	var s HostShare
	for i, d := range kb.hostDesigns {
		g := uint64(d.GPUs)
		cores := float64(d.CPUCores) / float64(d.GPUs)
		if i == 0 || cores < s.CoresPerGPU {
			s.CoresPerGPU, s.CoresFrom = cores, d
		}
		if i == 0 || d.MemoryBytes/g < s.MemoryPerGPU {
			s.MemoryPerGPU, s.MemoryFrom = d.MemoryBytes/g, d
		}
		if i == 0 || d.NVMeBytes/g < s.NVMePerGPU {
			s.NVMePerGPU, s.NVMeFrom = d.NVMeBytes/g, d
		}
	}
	return s, len(kb.hostDesigns) > 0
}

// loadHostDesigns reads host-designs.tsv.
func (kb *KB) loadHostDesigns() error {
	t, err := readTable(kb.fsys, "data/host-designs.tsv", "design", "gpus", "cpu_cores", "memory_gib", "nvme_gb", "status", "sources", "notes")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		num := func(col string) (uint64, error) {
			n, err := strconv.ParseUint(r.get(col), 10, 64)
			if err != nil || n == 0 {
				return 0, r.errorf("column %s: %q is not a whole number above 0", col, r.get(col))
			}
			return n, nil
		}
		var vals [4]uint64
		for i, col := range []string{"gpus", "cpu_cores", "memory_gib", "nvme_gb"} {
			if vals[i], err = num(col); err != nil {
				return err
			}
		}
		f := r.fact(st, "sources", "notes")
		if len(f.Sources) == 0 {
			return r.errorf("design %q has no source", r.get("design"))
		}
		kb.hostDesigns = append(kb.hostDesigns, HostDesign{
			Name: r.get("design"), GPUs: int(vals[0]), CPUCores: int(vals[1]),
			MemoryBytes: vals[2] << 30, NVMeBytes: vals[3] * 1000 * 1000 * 1000, Fact: f,
		})
	}
	if len(kb.hostDesigns) == 0 {
		return fmt.Errorf("data/host-designs.tsv: no rows")
	}
	return nil
}
