package lint

import "fmt"

// apptainerNvidiaContainerCLIRule declares apptainer_nvidia_container_cli.
func apptainerNvidiaContainerCLIRule() Rule {
	return Rule{
		Name:     "apptainer_nvidia_container_cli",
		Severity: Error,
		Summary:  "Apptainer is told to use nvidia-container-cli, but the NVIDIA Container Toolkit that installs it is not declared.",
		Check:    checkApptainerNvidiaContainerCLI,
	}
}

// apptainerNvccliLookup is where Apptainer looks nvidia-container-cli up
// on its binary path and fails the run when it is not there.
const apptainerNvccliLookup = "https://github.com/apptainer/apptainer/blob/917d66577963ca297352a22e13c86f1748ddc645/internal/pkg/util/gpu/nvidia.go#L92-L96"

func checkApptainerNvidiaContainerCLI(ctx *Context) {
	for _, n := range ctx.Nodes() {
		c := n.Container
		if c == nil || c.Runtime.V != "apptainer" || !c.Apptainer.UseNvidiaContainerCLI.V || c.NvidiaContainerToolkit.Set {
			continue
		}
		ctx.Report(c.Apptainer.UseNvidiaContainerCLI.Range,
			fmt.Sprintf("%s: apptainer_use_nvidia_container_cli without nvidia_container_toolkit: GPU runs will fail", nodeRef(n)),
			fmt.Sprintf("With \"use nvidia-container-cli = yes\" every --nv run sets the GPUs up by running nvidia-container-cli (libnvidia-container-tools), and fails when Apptainer cannot find it on its binary path (%s). Set nvidia_container_toolkit = \"<version>\": gpuform installs libnvidia-container-tools with it, pinned and held. Or leave apptainer_use_nvidia_container_cli off: --nv then binds the driver's libraries listed in nvliblist.conf and needs no toolkit.", apptainerNvccliLookup))
	}
}
