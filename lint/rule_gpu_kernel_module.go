package lint

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
)

// gpuKernelModuleRule declares gpu_kernel_module.
func gpuKernelModuleRule() Rule {
	return Rule{
		Name:     "gpu_kernel_module",
		Severity: Error,
		Summary:  "The driver's kernel-module flavour (open or proprietary) does not support the GPU or the branch.",
		Check:    checkKernelModule,
	}
}

func checkKernelModule(ctx *Context) {
	for _, n := range ctx.Nodes() {
		drv, ok := nodeDriver(n)
		if !ok {
			continue
		}
		flavour, ok := effectiveFlavour(ctx, n.Driver, drv)
		if !ok {
			continue
		}
		rng := at(n.Driver.KernelModule, n.Driver.Version.Range)
		how := fmt.Sprintf("kernel_module = %q", flavour)
		if !n.Driver.KernelModule.Set {
			how = fmt.Sprintf("the R%d default (%s)", drv.Branch(), flavour)
		}
		// Branch-level facts: open modules start at R515; R620 has only them.
		if f, ok := ctx.hostFact("open-modules-default"); ok && flavour == spec.KernelOpen {
			first, err := kb.ParseDriverVersion(strings.TrimSpace(strings.Split(f.Value, "/")[0]))
			if err == nil && drv.Branch() < first.Branch() {
				ctx.ReportAs(severityFor(f.Fact, Error), rng,
					fmt.Sprintf("%s: open kernel modules do not exist before R%d; driver %s is R%d", nodeRef(n), first.Branch(), drv, drv.Branch()),
					fmt.Sprintf("%s (%s). Use kernel_module = \"proprietary\" or a newer driver.", f.Statement, cite(f.Fact)))
			}
		}
		if f, ok := ctx.hostFact("open-modules-only-620"); ok && flavour == spec.KernelProprietary {
			only, err := kb.ParseDriverVersion(strings.TrimSpace(f.Value))
			if err == nil && drv.Branch() >= only.Branch() {
				ctx.ReportAs(severityFor(f.Fact, Error), rng,
					fmt.Sprintf("%s: driver R%d ships only the open kernel modules", nodeRef(n), drv.Branch()),
					fmt.Sprintf("%s (%s). Use kernel_module = \"open\". %s", f.Statement, cite(f.Fact), caveat(f.Fact)))
			}
		}
		m, ok := gpuModel(ctx, n)
		if !ok {
			continue
		}
		if m.KernelModules.Supports(string(flavour)) == kb.No {
			f := m.KernelModulesFact
			want := spec.KernelOpen
			if m.KernelModules == kb.ProprietaryOnly {
				want = spec.KernelProprietary
			}
			ctx.ReportAs(severityFor(f, Error), rng,
				fmt.Sprintf("%s: %s needs the %s kernel modules, but the driver uses %s", nodeRef(n), m.Name, want, how),
				fmt.Sprintf("%s GPUs are %s (%s); with the other flavour the driver does not load for them and nvidia-smi finds no devices. Set kernel_module = %q. %s", m.Architecture, m.KernelModules, cite(f), want, caveat(f)))
		}
	}
}
