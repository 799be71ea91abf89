package lint

import (
	"fmt"
	"strings"
)

func hostRules() []Rule {
	return []Rule{
		{
			Name:     "host_shm_size",
			Severity: Error,
			Summary:  "The host's /dev/shm is larger than its RAM.",
			Check:    checkHostShm,
		},
		{
			Name:     "numa_balancing",
			Severity: Warning,
			Summary:  "Automatic NUMA balancing stays on for a multi-socket GPU node.",
			Check:    checkNUMABalancing,
		},
		{
			Name:     "iommu_passthrough",
			Severity: Warning,
			Summary:  "GPUDirect RDMA is set up but the kernel command line lacks iommu=pt.",
			Check:    checkIOMMU,
		},
		{
			Name:     "persistence_mode",
			Severity: Warning,
			Summary:  "GPU persistence mode is off.",
			Check:    checkPersistence,
		},
		{
			Name:     "hugepages_exceed_ram",
			Severity: Error,
			Summary:  "The hugepages reservation is larger than the node's RAM.",
			Check:    checkHugepages,
		},
	}
}

func checkHostShm(ctx *Context) {
	floor, floorFact, hasFloor := ctx.kbShmFloor()
	for _, n := range ctx.Nodes() {
		if n.Shm == nil || !n.Shm.Size.Set {
			continue
		}
		size := n.Shm.Size.V
		var ram uint64
		if n.Hardware != nil {
			ram = n.Hardware.Memory.Bytes
		}
		// The same floor as containers': processes started on the host
		// (bare-metal mpirun, Slurm without containers) put NCCL's
		// intra-node buffers in the host's /dev/shm.
		if hasFloor && !size.Unlimited && (!size.IsPercent() || ram > 0) && size.Resolve(ram) < floor {
			ctx.ReportAs(severityFor(floorFact, Error), n.Shm.Size.Range,
				fmt.Sprintf("%s: /dev/shm size %s is below the %s NCCL needs", nodeRef(n), humanBytes(size.Resolve(ram)), humanBytes(floor)),
				fmt.Sprintf("Jobs started on the host itself (mpirun or srun without containers) keep NCCL's intra-node buffers in /dev/shm and fail with \"failed to extend /dev/shm\" when it is this small; NVIDIA's NCCL guide asks for at least %s (%s). Use a share of RAM, e.g. size = \"50%%\". %s",
					humanBytes(floor), cite(floorFact), caveat(floorFact)))
			continue
		}
		if ram == 0 || size.Unlimited || size.IsPercent() {
			continue
		}
		if size.Bytes > ram {
			ctx.Report(n.Shm.Size.Range,
				fmt.Sprintf("%s: /dev/shm size %s is larger than the node's %s of RAM", nodeRef(n), size, humanBytes(ram)),
				"/dev/shm is a tmpfs backed by RAM and swap; a size above RAM lets jobs fill memory until the OOM killer ends them (see tmpfs(5) and https://www.kernel.org/doc/html/latest/filesystems/tmpfs.html). Use a share of RAM instead, e.g. size = \"50%\".")
		}
	}
}

func checkNUMABalancing(ctx *Context) {
	hf, ok := ctx.hostFact("nccl-numa-balancing")
	if !ok {
		return
	}
	fact := hf.Fact
	for _, n := range ctx.Nodes() {
		if !multiSocket(n.Hardware) {
			continue
		}
		if n.NUMA != nil && n.NUMA.Balancing.Set && !n.NUMA.Balancing.V {
			continue
		}
		rng := n.DeclRange
		what := "numa { balancing } is not set, so the kernel default (on) stays"
		if n.NUMA != nil {
			rng = at(n.NUMA.Balancing, n.NUMA.DeclRange)
			if n.NUMA.Balancing.Set {
				what = "numa { balancing = true }"
			}
		}
		ctx.ReportAs(severityFor(fact, Warning), rng,
			fmt.Sprintf("%s: automatic NUMA balancing is on for a %d-NUMA-node machine", nodeRef(n), max(len(numaNodes(n.Hardware)), n.Hardware.CPUSockets)),
			fmt.Sprintf("%s. Kernel NUMA balancing migrates pages of pinned, GPU-bound processes between sockets and adds page faults to the data path; NVIDIA's CUDA best-practices and Grace tuning guides bind processes and turn it off (https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/index.html#numa-best-practices). %s Set numa { balancing = false }.", what, caveat(fact)))
	}
}

// iommuPassthroughArgs are kernel arguments that keep the IOMMU out of the
// peer-to-peer path: passthrough mode, or the IOMMU switched off.
var iommuPassthroughArgs = []string{"iommu=pt", "iommu.passthrough=1", "intel_iommu=off", "amd_iommu=off", "iommu=off"}

func checkIOMMU(ctx *Context) {
	hf, ok := ctx.hostFact("iommu-pt")
	if !ok {
		return
	}
	fact := hf.Fact
	for _, n := range ctx.Nodes() {
		if !gpuDirectIntended(n) {
			continue
		}
		found := false
		for _, a := range n.KernelArgs {
			// One element may carry several arguments ("intel_iommu=on iommu=pt").
			for _, arg := range strings.Fields(a.V) {
				for _, want := range iommuPassthroughArgs {
					if strings.EqualFold(arg, want) {
						found = true
					}
				}
			}
		}
		if found {
			continue
		}
		rng := n.KernelArgsRange
		if rng.Filename == "" {
			rng = n.DeclRange
			if n.Driver != nil && n.Driver.Peermem.Set {
				rng = n.Driver.Peermem.Range
			}
		}
		ctx.ReportAs(severityFor(fact, Warning), rng,
			fmt.Sprintf("%s: GPUDirect RDMA is set up but kernel_args has no iommu=pt", nodeRef(n)),
			fmt.Sprintf("With the IOMMU translating DMA, peer-to-peer traffic between GPUs and NICs is redirected through the CPU root complex or fails; NVIDIA's documentation asks for passthrough on bare metal (%s). Add \"iommu=pt\" to kernel_args (it needs a reboot).", cite(fact)))
	}
}

func checkPersistence(ctx *Context) {
	for _, n := range ctx.Nodes() {
		d := n.Driver
		if d == nil || (d.PersistenceMode.Set && d.PersistenceMode.V) {
			continue
		}
		ctx.Report(at(d.PersistenceMode, d.DeclRange),
			fmt.Sprintf("%s: persistence mode is off", nodeRef(n)),
			"Without nvidia-persistenced the driver tears GPU state down whenever no process holds the device, so every job start pays seconds of re-initialisation and ECC/clock settings can be lost (https://docs.nvidia.com/deploy/driver-persistence/index.html). Set persistence_mode = true in the driver block.")
	}
}

func checkHugepages(ctx *Context) {
	for _, n := range ctx.Nodes() {
		hp := n.Hugepages
		if hp == nil || !hp.Size.Set || !hp.Count.Set || n.Hardware == nil || n.Hardware.Memory.Bytes == 0 {
			continue
		}
		ram := n.Hardware.Memory.Bytes
		if hp.Size.V.IsPercent() || hp.Size.V.Unlimited || hp.Count.V <= 0 {
			continue
		}
		total := hp.Size.V.Bytes * uint64(hp.Count.V)
		if hp.Count.V > 0 && total/uint64(hp.Count.V) != hp.Size.V.Bytes || total >= ram {
			ctx.Report(hp.Count.Range,
				fmt.Sprintf("%s: %d hugepages of %s reserve more than the node's %s of RAM", nodeRef(n), hp.Count.V, hp.Size.V, humanBytes(ram)),
				"Huge pages are reserved at boot and are not available to anything else; reserving RAM or more leaves the kernel without memory and the node does not boot or OOM-kills at once (https://www.kernel.org/doc/html/latest/admin-guide/mm/hugetlbpage.html). Lower count so that size × count leaves room for the OS, CUDA pinned memory and /dev/shm.")
		}
	}
}
