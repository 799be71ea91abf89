package lint

import "fmt"

// enrootNvidiaContainerCLIRule declares enroot_nvidia_container_cli.
func enrootNvidiaContainerCLIRule() Rule {
	return Rule{
		Name:     "enroot_nvidia_container_cli",
		Severity: Error,
		Summary:  "enroot is the runtime but the NVIDIA Container Toolkit, whose nvidia-container-cli its GPU hook runs, is not declared.",
		Check:    checkEnrootNvidiaContainerCLI,
	}
}

// enrootNvidiaHook is enroot's GPU hook: it runs nvidia-container-cli from
// libnvidia-container (a package of the NVIDIA Container Toolkit's set) and
// fails the container's start without it.
const enrootNvidiaHook = "https://github.com/NVIDIA/enroot/blob/8ea147d337da60cb1c557140f3a85cdf0d620968/conf/hooks/98-nvidia.sh"

func checkEnrootNvidiaContainerCLI(ctx *Context) {
	for _, n := range ctx.Nodes() {
		c := n.Container
		if c == nil || c.Runtime.V != "enroot" || c.NvidiaContainerToolkit.Set {
			continue
		}
		ctx.Report(c.Runtime.Range,
			fmt.Sprintf("%s: runtime enroot without nvidia_container_toolkit: GPU containers will not start", nodeRef(n)),
			fmt.Sprintf("enroot gives containers their GPUs through its 98-nvidia.sh hook, which runs nvidia-container-cli (libnvidia-container-tools) and stops the container with \"Command not found: nvidia-container-cli\" when it is missing (%s). Set nvidia_container_toolkit = \"<version>\" in the container block: gpuform installs libnvidia-container-tools with it, pinned and held.", enrootNvidiaHook))
	}
}
