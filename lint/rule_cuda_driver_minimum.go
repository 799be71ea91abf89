package lint

import (
	"fmt"

	"github.com/gpuform/gpuform/kb"
)

// cudaDriverMinimumRule declares cuda_driver_minimum.
func cudaDriverMinimumRule() Rule {
	return Rule{
		Name:     "cuda_driver_minimum",
		Severity: Error,
		Summary:  "The CUDA toolkit needs a newer driver than the one pinned.",
		Check:    checkCUDADriver,
	}
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
			fullOK = kb.Unknown
		}
		mvcOK := mvc.Check(drv)
		switch {
		case fullOK == kb.Yes:
		case mvcOK == kb.No:
			need := mvc.Driver.String()
			f := mvc.Fact
			if !full.Driver.IsZero() {
				need = full.Driver.String()
			}
			ctx.ReportAs(severityFor(f, Error), a.Range,
				fmt.Sprintf("%s: CUDA %s needs driver %s or newer; driver %s is too old even for minor version compatibility", nodeRef(n), a.V.Raw, need, drv),
				fmt.Sprintf("CUDA %s (%s) needs driver %s for full compatibility, and any CUDA %d.x application needs at least branch R%s through minor version compatibility (%s). With driver %s, cudaInit fails with CUDA_ERROR_SYSTEM_DRIVER_MISMATCH / \"driver version is insufficient for CUDA runtime version\". Upgrade the driver to %s or later, or pin an older CUDA. %s",
					a.V.Raw, rel.Label, orDash(full.Driver), cuda.Major(), mvc.Driver, cite(f), drv, need, caveat(f)))
		case fullOK == kb.No && mvcOK == kb.Yes:
			ctx.ReportAs(Warning, a.Range,
				fmt.Sprintf("%s: CUDA %s runs on driver %s only through minor version compatibility", nodeRef(n), a.V.Raw, drv),
				fmt.Sprintf("CUDA %s (%s) needs driver %s for full compatibility (%s). Driver %s is in the minor-version-compatibility range of CUDA %d.x, so applications start, but features that need the newer driver fail (PTX JIT of newer PTX, some APIs return cudaErrorCallRequiresNewerDriver; see https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html). Upgrade the driver to %s or later.",
					a.V.Raw, rel.Label, full.Driver, cite(full.Fact), drv, cuda.Major(), full.Driver))
		case fullOK == kb.Unknown && !full.Driver.IsZero():
			ctx.ReportAs(Warning, n.Driver.Version.Range,
				fmt.Sprintf("%s: driver %s may resolve to a release older than the %s that CUDA %s needs", nodeRef(n), drv, full.Driver, a.V.Raw),
				fmt.Sprintf("The driver version floats over a branch; releases of R%d older than %s do not fully support CUDA %s (%s). Pin driver %s or later.",
					drv.Branch(), full.Driver, a.V.Raw, cite(full.Fact), full.Driver))
		case full.Driver.IsZero() && mvcOK == kb.Yes && !rel.Status.CanBeError():
			ctx.ReportAs(Info, a.Range,
				fmt.Sprintf("%s: the driver CUDA %s needs is not confirmed in the knowledge base", nodeRef(n), a.V.Raw),
				fmt.Sprintf("Driver %s is within CUDA %d.x minor version compatibility, but the full-compatibility driver of CUDA %s was not read from NVIDIA's table. %s", drv, cuda.Major(), a.V.Raw, caveat(rel.Fact)))
		}
	}
}
