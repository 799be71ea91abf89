package lint

import (
	"fmt"

	"github.com/gpuform/gpuform/kb"
)

// gpuDriverMinimumRule declares gpu_driver_minimum.
func gpuDriverMinimumRule() Rule {
	return Rule{
		Name:     "gpu_driver_minimum",
		Severity: Error,
		Summary:  "The GPU model needs a newer (or older) CUDA toolkit or driver than the one pinned.",
		Check:    checkGPUDriver,
	}
}

func checkGPUDriver(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.Hardware == nil || n.Hardware.GPUModel == "" {
			continue
		}
		m, ok := gpuModel(ctx, n)
		if !ok {
			if n.Driver != nil || n.CUDA != nil {
				ctx.ReportAs(Info, n.Hardware.Range,
					fmt.Sprintf("%s: GPU model %q is not in the knowledge base", nodeRef(n), n.Hardware.GPUModel),
					"gpuform cannot check the driver and CUDA requirements of this GPU. Use a model name of kb/data/gpu-models.tsv (or an alias of gpu-aliases.tsv) in the hardware profile.")
			}
			continue
		}
		drv, okD := nodeDriver(n)
		cuda, okC := nodeComponent(n.CUDA)
		if okD && m.MinDriver.Check(drv) == kb.No {
			f := m.MinDriver.Fact
			ctx.ReportAs(severityFor(f, Error), n.Driver.Version.Range,
				fmt.Sprintf("%s: %s needs driver %s or later; driver %s does not support it", nodeRef(n), m.Name, m.MinDriver.Driver, drv),
				fmt.Sprintf("The driver does not recognise the GPU and nvidia-smi reports no devices (%s). Upgrade the driver. %s", cite(f), caveat(f)))
		}
		if okC && !m.MinCUDA.IsZero() && cuda.Truncate(2).Compare(m.MinCUDA.Truncate(2)) < 0 {
			f := m.MinCUDAFact
			ctx.ReportAs(severityFor(f, Error), n.CUDA.Version.Range,
				fmt.Sprintf("%s: %s needs CUDA %s or later; CUDA %s cannot target it", nodeRef(n), m.Name, m.MinCUDA, cuda),
				fmt.Sprintf("Toolkits older than %s have no code for this GPU's architecture (%s): kernels fail with \"no kernel image is available for execution on the device\". Pin CUDA %s or later. %s", m.MinCUDA, cite(f), m.MinCUDA, caveat(f)))
		}
		arch, ok := ctx.kb().GPUArchitecture(n.Hardware.GPUModel)
		if !ok {
			continue
		}
		if okD && arch.LastDriverKnown && arch.LastDriverBranch > 0 && drv.Branch() > arch.LastDriverBranch {
			ctx.ReportAs(severityFor(arch.Fact, Error), n.Driver.Version.Range,
				fmt.Sprintf("%s: driver R%d no longer supports %s GPUs; R%d is the last branch that does", nodeRef(n), drv.Branch(), arch.Name, arch.LastDriverBranch),
				fmt.Sprintf("NVIDIA's architecture matrix ends %s support at R%d (%s). Stay on R%d. %s", arch.Name, arch.LastDriverBranch, cite(arch.Fact), arch.LastDriverBranch, caveat(arch.Fact)))
		}
		if okC && arch.LastCUDAMajor > 0 && cuda.Major() > arch.LastCUDAMajor {
			ctx.ReportAs(severityFor(arch.Fact, Error), n.CUDA.Version.Range,
				fmt.Sprintf("%s: CUDA %d.x cannot target %s GPUs; CUDA %d.x is the last that does", nodeRef(n), cuda.Major(), arch.Name, arch.LastCUDAMajor),
				fmt.Sprintf("NVIDIA removed %s from CUDA %d (%s). Pin CUDA %d.x. %s", arch.Name, arch.LastCUDAMajor+1, cite(arch.Fact), arch.LastCUDAMajor, caveat(arch.Fact)))
		}
	}
}
