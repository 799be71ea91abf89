package lint

import (
	"fmt"
)

// hostShmSizeRule declares host_shm_size.
func hostShmSizeRule() Rule {
	return Rule{
		Name:     "host_shm_size",
		Severity: Error,
		Summary:  "The host's /dev/shm is larger than its RAM.",
		Check:    checkHostShm,
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
