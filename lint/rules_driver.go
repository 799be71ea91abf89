package lint

import (
	"fmt"
	"strings"
	"time"

	"github.com/gpuform/gpuform/lint/compat"
	"github.com/gpuform/gpuform/spec"
)

func driverRules() []Rule {
	return []Rule{
		{
			Name:     "cuda_driver_minimum",
			Severity: Error,
			Summary:  "The CUDA toolkit needs a newer driver than the one pinned.",
			Check:    checkCUDADriver,
		},
		{
			Name:     "driver_branch_eol",
			Severity: Error,
			Summary:  "The driver branch is past its end of life.",
			Check:    checkDriverEOL,
		},
		{
			Name:     "container_image_driver",
			Severity: Error,
			Summary:  "A container image (NGC PyTorch) needs a newer driver than the one pinned.",
			Check:    checkImageDriver,
		},
		{
			Name:     "gpu_driver_minimum",
			Severity: Error,
			Summary:  "The GPU model needs a newer (or older) CUDA toolkit or driver than the one pinned.",
			Check:    checkGPUDriver,
		},
		{
			Name:     "gpu_kernel_module",
			Severity: Error,
			Summary:  "The driver's kernel-module flavour (open or proprietary) does not support the GPU or the branch.",
			Check:    checkKernelModule,
		},
		{
			Name:     "nccl_cuda_build",
			Severity: Error,
			Summary:  "NVIDIA publishes no NCCL build of the pinned release for the installed CUDA major.minor.",
			Check:    checkNCCLBuild,
		},
		{
			Name:     "dcgm_driver",
			Severity: Error,
			Summary:  "The DCGM major version needs a newer driver than the one pinned.",
			Check:    checkDCGMDriver,
		},
		{
			Name:     "container_toolkit_version",
			Severity: Error,
			Summary:  "The NVIDIA Container Toolkit release is vulnerable, unknown, or too old for the driver or for CDI.",
			Check:    checkToolkitVersion,
		},
	}
}

// notInKB reports a version the knowledge base does not know: never an
// error, because a release newer than the tables is usually fine.
func notInKB(ctx *Context, a spec.Attr[spec.Version], n *spec.Node, what, newest string) {
	detail := fmt.Sprintf("gpuform's knowledge base has no row for %s %s, so it cannot check its requirements. ", what, a.V.Raw)
	if newest != "" {
		detail += fmt.Sprintf("The newest %s it knows is %s. ", what, newest)
	}
	detail += "If the version is right, suppress this with # gpuform-ignore: " + ctx.rule.Name + " -- <reason>, and consider adding the release to lint/compat/data with its NVIDIA source."
	ctx.ReportAs(Warning, a.Range,
		fmt.Sprintf("%s: %s %s is not in the knowledge base", nodeRef(n), what, a.V.Raw), detail)
}

func checkCUDADriver(ctx *Context) {
	rels := ctx.kb().CUDAReleases()
	newest := ""
	if len(rels) > 0 {
		newest = rels[len(rels)-1].Version.String()
	}
	for _, n := range ctx.Nodes() {
		cuda, okC := nodeComponent(n.CUDA)
		drv, okD := nodeDriver(n)
		if !okC {
			continue
		}
		rel, ok := ctx.kb().CUDA(cuda)
		if !ok {
			notInKB(ctx, n.CUDA.Version, n, "CUDA", newest)
			continue
		}
		if !okD {
			continue
		}
		a := n.CUDA.Version
		full := rel.MinDriver
		mvc := rel.MVC
		fullOK := full.Check(drv)
		if full.Driver.IsZero() {
			fullOK = compat.Unknown
		}
		mvcOK := mvc.Check(drv)
		switch {
		case fullOK == compat.Yes:
		case mvcOK == compat.No:
			need := mvc.Driver.String()
			f := mvc.Fact
			if !full.Driver.IsZero() {
				need = full.Driver.String()
			}
			ctx.ReportAs(severityFor(f, Error), a.Range,
				fmt.Sprintf("%s: CUDA %s needs driver %s or newer; driver %s is too old even for minor version compatibility", nodeRef(n), a.V.Raw, need, drv),
				fmt.Sprintf("CUDA %s (%s) needs driver %s for full compatibility, and any CUDA %d.x application needs at least branch R%s through minor version compatibility (%s). With driver %s, cudaInit fails with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH / \"driver version is insufficient for CUDA runtime version\". Upgrade the driver to %s or later, or pin an older CUDA. %s",
					a.V.Raw, rel.Label, orDash(full.Driver), cuda.Major(), mvc.Driver, cite(f), drv, need, caveat(f)))
		case fullOK == compat.No && mvcOK == compat.Yes:
			ctx.ReportAs(Warning, a.Range,
				fmt.Sprintf("%s: CUDA %s runs on driver %s only through minor version compatibility", nodeRef(n), a.V.Raw, drv),
				fmt.Sprintf("CUDA %s (%s) needs driver %s for full compatibility (%s). Driver %s is in the minor-version-compatibility range of CUDA %d.x, so applications start, but features that need the newer driver fail (PTX JIT of newer PTX, some APIs return cudaErrorCallRequiresNewerDriver; see https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html). Upgrade the driver to %s or later.",
					a.V.Raw, rel.Label, full.Driver, cite(full.Fact), drv, cuda.Major(), full.Driver))
		case fullOK == compat.Unknown && !full.Driver.IsZero():
			ctx.ReportAs(Warning, n.Driver.Version.Range,
				fmt.Sprintf("%s: driver %s may resolve to a release older than the %s that CUDA %s needs", nodeRef(n), drv, full.Driver, a.V.Raw),
				fmt.Sprintf("The driver version floats over a branch; releases of R%d older than %s do not fully support CUDA %s (%s). Pin driver %s or later.",
					drv.Branch(), full.Driver, a.V.Raw, cite(full.Fact), full.Driver))
		case full.Driver.IsZero() && mvcOK == compat.Yes && !rel.Status.CanBeError():
			ctx.ReportAs(Info, a.Range,
				fmt.Sprintf("%s: the driver CUDA %s needs is not confirmed in the knowledge base", nodeRef(n), a.V.Raw),
				fmt.Sprintf("Driver %s is within CUDA %d.x minor version compatibility, but the full-compatibility driver of CUDA %s was not read from NVIDIA's table. %s", drv, cuda.Major(), a.V.Raw, caveat(rel.Fact)))
		}
	}
}

func orDash(v compat.Version) string {
	if v.IsZero() {
		return "(not in the table)"
	}
	return v.String()
}

// eolSoon is how early driver_branch_eol mentions an approaching end of life.
const eolSoon = 180 * 24 * time.Hour

func checkDriverEOL(ctx *Context) {
	branches := ctx.kb().Branches()
	newest := 0
	if len(branches) > 0 {
		newest = branches[len(branches)-1].Number
	}
	for _, n := range ctx.Nodes() {
		drv, ok := nodeDriver(n)
		if !ok {
			continue
		}
		a := n.Driver.Version
		b, ok := ctx.kb().DriverBranch(drv)
		if !ok {
			ctx.ReportAs(Warning, a.Range,
				fmt.Sprintf("%s: driver branch R%d is not in the knowledge base", nodeRef(n), drv.Branch()),
				fmt.Sprintf("gpuform's knowledge base has no lifecycle row for R%d (the newest branch it knows is R%d), so its end of life is not checked. Check NVIDIA's \"Supported Drivers and CUDA Toolkit Versions\" page (https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html) and suppress with a reason, or add the branch to lint/compat/data/driver-branches.tsv.", drv.Branch(), newest))
			continue
		}
		eol, f := b.IsEOL(ctx.Now)
		switch eol {
		case compat.Yes:
			when := "NVIDIA lists it as end of life"
			if !b.EOL.Date.IsZero() {
				when = "its end of life was " + b.EOL.Text
			}
			ctx.ReportAs(severityFor(f, Error), a.Range,
				fmt.Sprintf("%s: driver branch R%d is past its end of life", nodeRef(n), b.Number),
				fmt.Sprintf("R%d (%s) no longer receives security or bug fixes: %s (%s). Move to a supported production or long term support branch. %s", b.Number, b.Type, when, cite(f), caveat(f)))
		case compat.No:
			if !b.EOL.Date.IsZero() && b.EOL.Date.Sub(ctx.Now) < eolSoon {
				ctx.ReportAs(Info, a.Range,
					fmt.Sprintf("%s: driver branch R%d reaches end of life in %s", nodeRef(n), b.Number, b.EOL.Text),
					fmt.Sprintf("Plan the move to a newer branch before support ends (%s).", cite(f)))
			}
		}
		if b.Type == compat.EvaluationBranch {
			ctx.ReportAs(Warning, a.Range,
				fmt.Sprintf("%s: driver branch R%d is an evaluation/developer branch", nodeRef(n), b.Number),
				fmt.Sprintf("Evaluation branches have no support lifecycle and are not meant for production nodes (%s).", cite(b.TypeFact)))
		}
	}
}

func checkImageDriver(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.Container == nil {
			continue
		}
		drv, okD := nodeDriver(n)
		for _, img := range n.Container.Images {
			if !compat.IsNGCImage(img.V) {
				continue
			}
			im, ok := ctx.kb().NGCImage(img.V)
			if !ok {
				_, tag := imageRepoTag(img.V)
				if strings.HasPrefix(strings.ToLower(img.V), "nvcr.io/nvidia/pytorch:") && tag != "" {
					ctx.ReportAs(Warning, img.Range,
						fmt.Sprintf("%s: image %s is not in the knowledge base", nodeRef(n), img.V),
						"gpuform knows the driver requirements of NGC PyTorch releases in lint/compat/data/ngc-pytorch.tsv; this tag is not among them, so its driver requirement is not checked. Check the image's release notes (https://docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/) or suppress with a reason.")
				}
				continue
			}
			if !okD {
				continue
			}
			if im.MinDriverBranch > 0 && drv.Branch() < im.MinDriverBranch {
				if _, ok := datacenterException(im, drv); ok {
					// NVIDIA lists this older data-center driver as able to
					// run the image through forward compatibility.
					continue
				}
				f := im.MinDriverFact
				ctx.ReportAs(severityFor(f, Error), img.Range,
					fmt.Sprintf("%s: image %s needs driver R%d or later; driver %s is older", nodeRef(n), img.V, im.MinDriverBranch, drv),
					fmt.Sprintf("%s %s is built on CUDA %s and NVIDIA's release notes ask for driver %d or later%s (%s). Older drivers fail at the first CUDA call with \"driver version is insufficient\". Upgrade the driver or use an older image. %s",
						imageFamily(im), im.Release, orDash(im.CUDA), im.MinDriverBranch, exceptionText(im), cite(f), caveat(f)))
				continue
			}
			// Even when the release notes' branch sentence is met, the
			// image's CUDA has its own floor: a page that says "575 or
			// later" for a CUDA 13 image cannot lower CUDA 13's R580 floor.
			// No branch sentence in the table: judge by the CUDA in the image.
			if im.CUDA.IsZero() {
				continue
			}
			rel, ok := ctx.kb().CUDA(im.CUDA.Truncate(3))
			if !ok {
				continue
			}
			if rel.MVC.Check(drv) == compat.No {
				f := im.CUDAFact
				if rel.Status < f.Status {
					f = rel.Fact
				}
				ctx.ReportAs(severityFor(f, Error), img.Range,
					fmt.Sprintf("%s: image %s ships CUDA %s, which driver %s cannot run", nodeRef(n), img.V, im.CUDA, drv),
					fmt.Sprintf("CUDA %d.x needs at least driver branch R%s even through minor version compatibility (%s); the image's CUDA comes from %s. Upgrade the driver or use an older image. %s",
						im.CUDA.Major(), rel.MVC.Driver, cite(rel.MVC.Fact), cite(im.CUDAFact), caveat(f)))
			}
		}
	}
}

// datacenterException finds a data-center driver that NVIDIA lists as able
// to run the image through forward compatibility ("525.85+").
func datacenterException(im compat.NGCImage, drv compat.Version) (compat.DriverMinimum, bool) {
	for _, e := range im.DatacenterExceptions {
		if e.Driver.Branch() == drv.Branch() && e.Check(drv) == compat.Yes {
			return e, true
		}
	}
	return compat.DriverMinimum{}, false
}

func exceptionText(im compat.NGCImage) string {
	if len(im.DatacenterExceptions) == 0 {
		return ""
	}
	var s []string
	for _, e := range im.DatacenterExceptions {
		s = append(s, e.Driver.String()+"+")
	}
	return " (data-center exceptions: " + strings.Join(s, ", ") + ")"
}

// gpuModel looks the hardware's GPU model up in the knowledge base.
func gpuModel(ctx *Context, n *spec.Node) (compat.GPUModel, bool) {
	if n.Hardware == nil || n.Hardware.GPUModel == "" {
		return compat.GPUModel{}, false
	}
	return ctx.kb().GPU(n.Hardware.GPUModel)
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
					"gpuform cannot check the driver and CUDA requirements of this GPU. Use a model name of lint/compat/data/gpu-models.tsv (or an alias of gpu-aliases.tsv) in the hardware profile.")
			}
			continue
		}
		drv, okD := nodeDriver(n)
		cuda, okC := nodeComponent(n.CUDA)
		if okD && m.MinDriver.Check(drv) == compat.No {
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

// effectiveFlavour is the kernel-module flavour a driver installs: the
// written one, or the branch default (open from R560, facts.tsv
// open-modules-default).
func effectiveFlavour(ctx *Context, d *spec.Driver, drv compat.Version) (string, bool) {
	if d.KernelModule.Set {
		return strings.ToLower(d.KernelModule.V), true
	}
	f, ok := ctx.hostFact("open-modules-default")
	if !ok {
		return "", false
	}
	// The value reads "R515 / R560": open exists from the first, default
	// from the second.
	parts := strings.Split(f.Value, "/")
	def, err := compat.ParseDriverVersion(strings.TrimSpace(parts[len(parts)-1]))
	if err != nil {
		return "", false
	}
	if drv.Branch() >= def.Branch() {
		return "open", true
	}
	return "proprietary", true
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
		if f, ok := ctx.hostFact("open-modules-default"); ok && flavour == "open" {
			first, err := compat.ParseDriverVersion(strings.TrimSpace(strings.Split(f.Value, "/")[0]))
			if err == nil && drv.Branch() < first.Branch() {
				ctx.ReportAs(severityFor(f.Fact, Error), rng,
					fmt.Sprintf("%s: open kernel modules do not exist before R%d; driver %s is R%d", nodeRef(n), first.Branch(), drv, drv.Branch()),
					fmt.Sprintf("%s (%s). Use kernel_module = \"proprietary\" or a newer driver.", f.Statement, cite(f.Fact)))
			}
		}
		if f, ok := ctx.hostFact("open-modules-only-620"); ok && flavour == "proprietary" {
			only, err := compat.ParseDriverVersion(strings.TrimSpace(f.Value))
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
		if m.KernelModules.Supports(flavour) == compat.No {
			f := m.KernelModulesFact
			want := "open"
			if m.KernelModules == compat.ProprietaryOnly {
				want = "proprietary"
			}
			ctx.ReportAs(severityFor(f, Error), rng,
				fmt.Sprintf("%s: %s needs the %s kernel modules, but the driver uses %s", nodeRef(n), m.Name, want, how),
				fmt.Sprintf("%s GPUs are %s (%s); with the other flavour the driver does not load for them and nvidia-smi finds no devices. Set kernel_module = %q. %s", m.Architecture, m.KernelModules, cite(f), want, caveat(f)))
		}
	}
}

func checkNCCLBuild(ctx *Context) {
	rels := ctx.kb().NCCLReleases()
	newest := ""
	if len(rels) > 0 {
		newest = rels[len(rels)-1].Version.String()
	}
	for _, n := range ctx.Nodes() {
		nccl, okN := nodeComponent(n.NCCL)
		if !okN || !nccl.IsExact() {
			continue
		}
		cuda, okC := nodeComponent(n.CUDA)
		ans, ok := ctx.kb().NCCLUsableBuild(nccl, cuda)
		if !ok {
			notInKB(ctx, n.NCCL.Version, n, "NCCL", newest)
			continue
		}
		if !okC || ans.Available != compat.No {
			continue
		}
		rel, _ := ctx.kb().NCCL(nccl)
		var builds []string
		for _, b := range rel.Builds {
			builds = append(builds, "cuda"+b.CUDA.String())
		}
		ctx.ReportAs(severityFor(ans.Fact, Error), n.NCCL.Version.Range,
			fmt.Sprintf("%s: NCCL %s has no build for CUDA %s", nodeRef(n), nccl, cuda.Truncate(2)),
			fmt.Sprintf("NVIDIA published NCCL %s only as %s (%s); there is no libnccl2=%s-1+cuda%s package to install, and an NCCL built for a newer CUDA minor does not load with an older runtime. Pick an NCCL release built for CUDA %s (or an older minor of CUDA %d), or change CUDA. %s",
				nccl, strings.Join(builds, ", "), cite(ans.Fact), nccl, cuda.Truncate(2), cuda.Truncate(2), cuda.Major(), caveat(ans.Fact)))
	}
}

func checkDCGMDriver(ctx *Context) {
	for _, n := range ctx.Nodes() {
		dcgm, okG := nodeComponent(n.DCGM)
		if !okG {
			continue
		}
		flavor := ""
		if cuda, ok := nodeComponent(n.CUDA); ok {
			flavor = fmt.Sprintf("cuda%d", cuda.Major())
		}
		nvswitch := n.Hardware != nil && n.Hardware.Interconnect == "nvswitch"
		min, ok := ctx.kb().DCGMMinDriver(dcgm, flavor, nvswitch)
		if !ok {
			notInKB(ctx, n.DCGM.Version, n, "DCGM", "")
			continue
		}
		drv, okD := nodeDriver(n)
		if !okD || min.Check(drv) != compat.No {
			continue
		}
		ctx.ReportAs(severityFor(min.Fact, Error), n.DCGM.Version.Range,
			fmt.Sprintf("%s: DCGM %d needs driver %s or later; driver %s is older", nodeRef(n), dcgm.Major(), min.Driver, drv),
			fmt.Sprintf("DCGM's host engine does not start (or its diagnostics fail) on an older driver (%s). Upgrade the driver or use an older DCGM major. %s", cite(min.Fact), caveat(min.Fact)))
	}
}

func checkToolkitVersion(ctx *Context) {
	rels := ctx.kb().ContainerToolkitReleases()
	newest := ""
	if len(rels) > 0 {
		newest = rels[len(rels)-1].Version.String()
	}
	for _, n := range ctx.Nodes() {
		if n.Container == nil || !n.Container.NvidiaContainerToolkit.Set {
			continue
		}
		a := n.Container.NvidiaContainerToolkit
		v, ok := releaseVersion(a.V)
		if !ok {
			continue
		}
		if _, known := ctx.kb().ContainerToolkit(v); !known && v.IsExact() {
			notInKB(ctx, a, n, "NVIDIA Container Toolkit", newest)
		}
		for _, adv := range toolkitAdvisories() {
			if v.Compare(adv.fixed) < 0 && (v.IsExact() || !adv.fixed.Within(v)) {
				ctx.ReportAs(severityFor(adv.fact, Error), a.Range,
					fmt.Sprintf("%s: NVIDIA Container Toolkit %s is affected by %s", nodeRef(n), a.V.Raw, adv.id),
					fmt.Sprintf("%s affects releases before %s (%s): %s Upgrade to %s or later. %s", adv.id, adv.fixed, cite(adv.fact), adv.note, adv.fixed, caveat(adv.fact)))
			}
		}
		if drv, ok := nodeDriver(n); ok {
			if min, ok := ctx.kb().ToolkitMinDriver(); ok && min.Check(drv) == compat.No {
				ctx.ReportAs(severityFor(min.Fact, Error), a.Range,
					fmt.Sprintf("%s: the NVIDIA Container Toolkit needs driver %s or later; driver %s is older", nodeRef(n), min.Driver, drv),
					fmt.Sprintf("%s %s", cite(min.Fact), caveat(min.Fact)))
			}
		}
		if _, okD := nodeDriver(n); okD {
			if t, f := ctx.kb().ToolkitSupports(v, "cdi-auto-refresh"); t == compat.No {
				feat, _ := ctx.kb().ToolkitFeature("cdi-auto-refresh")
				ctx.ReportAs(Info, a.Range,
					fmt.Sprintf("%s: NVIDIA Container Toolkit %s does not refresh CDI specs after a driver change", nodeRef(n), a.V.Raw),
					fmt.Sprintf("CDI specifications name the driver's files by version; after a driver upgrade a stale spec makes containers fail to start until `nvidia-ctk cdi generate` runs again. From toolkit %s the %s does this on its own (%s). Upgrade the toolkit, or regenerate CDI specs after every driver change.", feat.MinToolkit, feat.Value, cite(f)))
			}
		}
	}
}

// imageFamily names the NGC container family of an image for messages.
func imageFamily(im compat.NGCImage) string {
	switch {
	case strings.HasSuffix(im.Repository, "/tritonserver"):
		return "NGC Triton Inference Server"
	case strings.HasSuffix(im.Repository, "/pytorch"):
		return "NGC PyTorch"
	}
	return "NGC image"
}
