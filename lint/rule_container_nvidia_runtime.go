package lint

import (
	"fmt"
)

// containerNvidiaRuntimeRule declares container_nvidia_runtime.
func containerNvidiaRuntimeRule() Rule {
	return Rule{
		Name:     "container_nvidia_runtime",
		Severity: Error,
		Summary:  "Container images are declared but the NVIDIA Container Toolkit is not.",
		Check:    checkContainerRuntime,
	}
}

func checkContainerRuntime(ctx *Context) {
	for _, n := range ctx.Nodes() {
		c := n.Container
		if c == nil || len(c.Images) == 0 || c.NvidiaContainerToolkit.Set {
			continue
		}
		if c.Runtime.V == "apptainer" {
			// --nv binds the driver's own libraries (nvliblist.conf) and
			// needs no toolkit; apptainer_nvidia_container_cli judges
			// the nvidia-container-cli flow.
			continue
		}
		img := c.Images[0]
		ctx.Report(img.Range,
			fmt.Sprintf("%s: image %s is declared but nvidia_container_toolkit is not", nodeRef(n), img.V),
			"Without the NVIDIA Container Toolkit the container engine has no NVIDIA runtime or CDI devices, so containers start without GPUs (\"could not select device driver with capabilities: [[gpu]]\"). Set nvidia_container_toolkit = \"<version>\" in the container block (see https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html).")
	}
}
