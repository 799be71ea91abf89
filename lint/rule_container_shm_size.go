package lint

import (
	"fmt"
)

// containerShmSizeRule declares container_shm_size.
func containerShmSizeRule() Rule {
	return Rule{
		Name:     "container_shm_size",
		Severity: Error,
		Summary:  "Containers get Docker's 64 MB /dev/shm, which breaks NCCL and PyTorch DataLoader workers.",
		Check:    checkContainerShmSize,
	}
}

func checkContainerShmSize(ctx *Context) {
	floor, floorFact, ok1 := ctx.kbShmFloor()
	def, defFact, ok2 := ctx.kbDockerShmDefault()
	if !ok1 || !ok2 {
		return
	}
	for _, n := range ctx.Nodes() {
		c := n.Container
		if c == nil || c.Runtime.V == "containerd" || c.Runtime.V == "enroot" || c.Runtime.V == "apptainer" {
			// default_shm_size is Docker's daemon setting; containerd has
			// none (a pod sets its own /dev/shm), and enroot and Apptainer
			// bind the host's /dev/shm (host_shm_size judges that).
			continue
		}
		gpus := gpuCount(n.Hardware)
		if !c.DefaultShmSize.Set {
			ctx.ReportAs(severityFor(floorFact, Error), c.DeclRange,
				fmt.Sprintf("%s: containers will get the default %s /dev/shm", nodeRef(n), humanBytes(def)),
				fmt.Sprintf("Without default_shm_size every container starts with a %s /dev/shm (%s). NCCL places its intra-node buffers there and fails with \"failed to extend /dev/shm\"; PyTorch DataLoader workers die with bus errors. NVIDIA's NCCL guide asks for at least %s (%s). Set default_shm_size = \"%s\" or more; a common choice is 1GiB per GPU.",
					humanBytes(def), cite(defFact), humanBytes(floor), cite(floorFact), humanBytes(floor)))
			continue
		}
		size := c.DefaultShmSize.V
		var ram uint64
		if n.Hardware != nil {
			ram = n.Hardware.Memory.Bytes
		}
		if size.IsPercent() && ram == 0 {
			continue
		}
		b := size.Resolve(ram)
		switch {
		case size.Unlimited:
		case b < floor:
			ctx.ReportAs(severityFor(floorFact, Error), c.DefaultShmSize.Range,
				fmt.Sprintf("%s: default_shm_size %s is below the %s NCCL needs", nodeRef(n), size, humanBytes(floor)),
				fmt.Sprintf("NCCL and DataLoader workers need a large /dev/shm; NVIDIA's NCCL guide suggests at least %s (%s), and Docker's own default is %s. Raise default_shm_size to %s or more (1GiB per GPU scales with the node).",
					humanBytes(floor), cite(floorFact), humanBytes(def), humanBytes(floor)))
		case gpus > 1 && b < floor*uint64(gpus):
			ctx.ReportAs(Info, c.DefaultShmSize.Range,
				fmt.Sprintf("%s: default_shm_size %s is less than %s per GPU for %d GPUs", nodeRef(n), size, humanBytes(floor), gpus),
				fmt.Sprintf("NCCL's %s suggestion (%s) is for one process; with one rank per GPU each process maps its own segments. Consider %s.",
					humanBytes(floor), cite(floorFact), humanBytes(floor*uint64(gpus))))
		}
	}
}
