package lint

import "fmt"

// apptainerMountDevRule declares apptainer_mount_dev.
func apptainerMountDevRule() Rule {
	return Rule{
		Name:     "apptainer_mount_dev",
		Severity: Error,
		Summary:  "Apptainer's \"mount dev = no\" leaves containers without /dev, so --nv containers see no GPU device.",
		Check:    checkApptainerMountDev,
	}
}

// apptainerDevMount is Apptainer's /dev set-up: "no" mounts nothing, "yes"
// binds the host's /dev, and only the "minimal" branch adds the NVIDIA
// device nodes of the --nv (nvliblist.conf) flow.
const apptainerDevMount = "https://github.com/apptainer/apptainer/blob/917d66577963ca297352a22e13c86f1748ddc645/internal/pkg/runtime/engine/apptainer/container_linux.go#L1580-L1715"

func checkApptainerMountDev(ctx *Context) {
	for _, n := range ctx.Nodes() {
		c := n.Container
		if c == nil || c.Runtime.V != "apptainer" || c.Apptainer.MountDev.V != "no" || c.Apptainer.UseNvidiaContainerCLI.V {
			continue
		}
		ctx.Report(c.Apptainer.MountDev.Range,
			fmt.Sprintf("%s: apptainer_mount_dev = \"no\": --nv containers will have no /dev/nvidia* devices", nodeRef(n)),
			fmt.Sprintf("With \"mount dev = no\" Apptainer mounts no /dev into containers, and the --nv flow adds the NVIDIA device nodes only to a \"minimal\" /dev (%s): CUDA then finds no device. Use apptainer_mount_dev = \"minimal\" to keep /dev small with the GPUs in it, or \"yes\".", apptainerDevMount))
	}
}
