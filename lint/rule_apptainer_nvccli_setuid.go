package lint

import "fmt"

// apptainerNvccliSetuidRule declares apptainer_nvccli_setuid.
func apptainerNvccliSetuidRule() Rule {
	return Rule{
		Name:     "apptainer_nvccli_setuid",
		Severity: Warning,
		Summary:  "Apptainer is told to set GPUs up with nvidia-container-cli while its setuid mode stays allowed, where Apptainer refuses nvidia-container-cli.",
		Check:    checkApptainerNvccliSetuid,
	}
}

// apptainerSetuidRefusal is where Apptainer refuses nvidia-container-cli
// in its setuid flow: the starter would run an external program with
// privileges.
const apptainerSetuidRefusal = "https://github.com/apptainer/apptainer/blob/917d66577963ca297352a22e13c86f1748ddc645/internal/pkg/runtime/engine/apptainer/prepare_linux.go#L245-L250"

func checkApptainerNvccliSetuid(ctx *Context) {
	for _, n := range ctx.Nodes() {
		c := n.Container
		if c == nil || c.Runtime.V != "apptainer" || !c.Apptainer.UseNvidiaContainerCLI.V {
			continue
		}
		s := c.Apptainer.AllowSetuid
		if s.Set && !s.V {
			continue
		}
		ctx.Report(c.Apptainer.UseNvidiaContainerCLI.Range,
			fmt.Sprintf("%s: apptainer_use_nvidia_container_cli with setuid mode allowed: GPU runs fail on a setuid installation", nodeRef(n)),
			fmt.Sprintf("With apptainer-suid installed and \"allow setuid = yes\" (Apptainer's default) every --nv run takes the setuid flow, where Apptainer refuses nvidia-container-cli and stops with \"nvidia-container-cli not allowed in setuid mode\" (%s; apptainer/apptainer#686). Set apptainer_allow_setuid = false so runs use unprivileged user namespaces, or leave apptainer_use_nvidia_container_cli off and keep the nvliblist.conf binding.", apptainerSetuidRefusal))
	}
}
