package lint

import (
	"fmt"
	"strings"
)

func containerRules() []Rule {
	return []Rule{
		{
			Name:     "container_shm_size",
			Severity: Error,
			Summary:  "Containers get Docker's 64 MB /dev/shm, which breaks NCCL and PyTorch DataLoader workers.",
			Check:    checkContainerShmSize,
		},
		{
			Name:     "container_memlock",
			Severity: Error,
			Summary:  "The memlock ulimit of containers is not unlimited on a node with RDMA NICs.",
			Check:    checkContainerMemlock,
		},
		{
			Name:     "container_stack_ulimit",
			Severity: Warning,
			Summary:  "The stack ulimit of containers is below NVIDIA's NGC recommendation, or unlimited.",
			Check:    checkContainerStack,
		},
		{
			Name:     "container_nvidia_runtime",
			Severity: Error,
			Summary:  "Container images are declared but the NVIDIA Container Toolkit is not.",
			Check:    checkContainerRuntime,
		},
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
		if c == nil {
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

func checkContainerMemlock(ctx *Context) {
	_, fact, ok := ctx.kbShmFloor()
	if !ok {
		return
	}
	for _, n := range ctx.Nodes() {
		c := n.Container
		if c == nil || len(rdmaNICs(n.Hardware)) == 0 {
			continue
		}
		ml, ok := c.Ulimits["memlock"]
		if ok && ml.V.Unlimited {
			continue
		}
		rng := c.DeclRange
		what := "no memlock ulimit is set"
		if ok {
			rng, what = ml.Range, fmt.Sprintf("memlock is %s", ml.V)
		} else if c.UlimitsRange.Filename != "" {
			rng = c.UlimitsRange
		}
		ctx.ReportAs(severityFor(fact, Error), rng,
			fmt.Sprintf("%s: %s, but the node has RDMA NICs", nodeRef(n), what),
			fmt.Sprintf("RDMA (InfiniBand, RoCE, GPUDirect) registers pinned memory; with a bounded memlock limit NCCL's IB transport fails to register buffers or falls back to sockets. NVIDIA's NCCL guide runs containers with --ulimit memlock=-1 (%s). Set ulimits = { memlock = \"unlimited\" }.", cite(fact)))
	}
}

func checkContainerStack(ctx *Context) {
	want, fact, ok := ctx.kbNGCStack()
	if !ok {
		return
	}
	fixedIn, unlimitedFact, unlimitedOK := ctx.kbNCCLStackFix()
	for _, n := range ctx.Nodes() {
		c := n.Container
		if c == nil {
			continue
		}
		st, ok := c.Ulimits["stack"]
		if !ok {
			continue
		}
		switch {
		case st.V.Unlimited:
			if !unlimitedOK {
				continue
			}
			if v, ok := nodeComponent(n.NCCL); ok && !fixedIn.IsZero() && v.Truncate(2).Compare(fixedIn) >= 0 {
				continue
			}
			ctx.ReportAs(severityFor(unlimitedFact, Warning), st.Range,
				fmt.Sprintf("%s: stack ulimit is unlimited", nodeRef(n)),
				fmt.Sprintf("With an unlimited stack glibc gives new threads only 2 MB, and NCCL has crashed in that setting (%s); NCCL 2.28 and later size their own thread stacks. Use stack = \"%s\" as NGC images recommend.", cite(unlimitedFact), humanBytes(want)))
		case !st.V.IsPercent() && st.V.Bytes < want:
			ctx.ReportAs(severityFor(fact, Warning), st.Range,
				fmt.Sprintf("%s: stack ulimit %s is below the %s NGC images ask for", nodeRef(n), st.V, humanBytes(want)),
				fmt.Sprintf("NVIDIA's NGC framework images print a warning at start-up and recommend --ulimit stack=%d (%s). Set ulimits = { stack = \"%s\" }.", want, cite(fact), humanBytes(want)))
		}
	}
}

func checkContainerRuntime(ctx *Context) {
	for _, n := range ctx.Nodes() {
		c := n.Container
		if c == nil || len(c.Images) == 0 || c.NvidiaContainerToolkit.Set {
			continue
		}
		img := c.Images[0]
		ctx.Report(img.Range,
			fmt.Sprintf("%s: image %s is declared but nvidia_container_toolkit is not", nodeRef(n), img.V),
			"Without the NVIDIA Container Toolkit the container engine has no NVIDIA runtime or CDI devices, so containers start without GPUs (\"could not select device driver with capabilities: [[gpu]]\"). Set nvidia_container_toolkit = \"<version>\" in the container block (see https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html).")
	}
}

// imageRepoTag splits "nvcr.io/nvidia/pytorch:24.05-py3" into repository
// and tag ("" when untagged or pinned by digest only).
func imageRepoTag(image string) (repo, tag string) {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	slash := strings.LastIndex(image, "/")
	if i := strings.LastIndex(image, ":"); i > slash {
		return image[:i], image[i+1:]
	}
	return image, ""
}
