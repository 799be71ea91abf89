package lint

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
)

// ncclCUDABuildRule declares nccl_cuda_build.
func ncclCUDABuildRule() Rule {
	return Rule{
		Name:     "nccl_cuda_build",
		Severity: Error,
		Summary:  "NVIDIA publishes no NCCL build of the pinned release for the installed CUDA major.minor.",
		Check:    checkNCCLBuild,
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
		if !okC || ans.Available != kb.No {
			continue
		}
		rel, _ := ctx.kb().NCCL(nccl)
		var builds []string
		var newer *kb.NCCLBuild
		for i, b := range rel.Builds {
			builds = append(builds, "cuda"+b.CUDA.String())
			if b.CUDA.Major() == cuda.Major() && b.CUDA.Minor() > cuda.Minor() && (newer == nil || b.CUDA.Less(newer.CUDA)) {
				newer = &rel.Builds[i]
			}
		}
		if newer != nil && newerBuildRuns(ctx, n, nccl, cuda, *newer, builds) {
			continue
		}
		ctx.ReportAs(severityFor(ans.Fact, Error), n.NCCL.Version.Range,
			fmt.Sprintf("%s: NCCL %s has no build for CUDA %s", nodeRef(n), nccl, cuda.Truncate(2)),
			fmt.Sprintf("NVIDIA published NCCL %s only as %s (%s); there is no libnccl2=%s-1+cuda%s package to install, and no build for an older minor of CUDA %d. Pick an NCCL release built for CUDA %s (or an older minor of CUDA %d), or change CUDA. %s",
				nccl, strings.Join(builds, ", "), cite(ans.Fact), nccl, cuda.Truncate(2), cuda.Major(), cuda.Truncate(2), cuda.Major(), caveat(ans.Fact)))
	}
}

// ncclNewerMinorSource is the NCCL maintainer's word that a build for a
// newer CUDA minor works when the driver is recent enough.
const ncclNewerMinorSource = "https://github.com/NVIDIA/nccl/issues/1093"

// newerBuildRuns judges an NCCL release that has no build for the node's
// CUDA minor (or an older one) but has one for a newer minor of the same
// major: NCCL's maintainer says that build works "if your CUDA driver is
// recent enough" (NVIDIA/nccl#1093). It reports what it finds and returns
// true when it has spoken (nothing more to say); false sends the caller to
// the no-build error (no driver old enough is known to fail is not a reason
// to pass: a driver the CUDA tables say is too old for the build's minor).
func newerBuildRuns(ctx *Context, n *spec.Node, nccl, cuda kb.Version, b kb.NCCLBuild, builds []string) bool {
	a := n.NCCL.Version
	pkg := fmt.Sprintf("%s-1+cuda%s", nccl, b.CUDA)
	drv, okD := nodeDriver(n)
	full, okF := ctx.kb().CUDAMinDriver(b.CUDA)
	if !okD || !drv.IsExact() || !okF {
		ctx.ReportAs(Warning, a.Range,
			fmt.Sprintf("%s: NCCL %s has no build for CUDA %s; its CUDA %s build needs a driver recent enough for CUDA %s", nodeRef(n), nccl, cuda.Truncate(2), b.CUDA, b.CUDA),
			fmt.Sprintf("NVIDIA published NCCL %s as %s (%s). A build for a newer CUDA minor works when the driver is recent enough (NCCL's maintainer, %s): install %s and pin an exact driver that supports CUDA %s so lint can check it.", nccl, strings.Join(builds, ", "), cite(b.Fact), ncclNewerMinorSource, pkg, b.CUDA))
		return true
	}
	switch full.Check(drv) {
	case kb.Yes:
		// The driver supports the build's CUDA minor outright.
		return true
	case kb.No:
		if mvc, ok := ctx.kb().CUDAMinDriverMVC(b.CUDA); ok && mvc.Check(drv) == kb.Yes {
			ctx.ReportAs(Warning, a.Range,
				fmt.Sprintf("%s: NCCL %s has no build for CUDA %s; its CUDA %s build runs on driver %s only through minor version compatibility", nodeRef(n), nccl, cuda.Truncate(2), b.CUDA, drv),
				fmt.Sprintf("NVIDIA published NCCL %s as %s (%s). NCCL's maintainer says a build for a newer CUDA minor works when the driver is recent enough (%s); CUDA %s's own driver is %s (%s), and driver %s meets only the minor-version-compatibility floor %s (%s), under which features of the newer runtime may fail. Use driver %s or later with %s, or an NCCL release built for CUDA %s.", nccl, strings.Join(builds, ", "), cite(b.Fact), ncclNewerMinorSource, b.CUDA, full.Driver, cite(full.Fact), drv, mvc.Driver, cite(mvc.Fact), full.Driver, pkg, cuda.Truncate(2)))
			return true
		}
		return false
	}
	ctx.ReportAs(Warning, a.Range,
		fmt.Sprintf("%s: NCCL %s has no build for CUDA %s; whether driver %s runs its CUDA %s build is not known", nodeRef(n), nccl, cuda.Truncate(2), drv, b.CUDA),
		fmt.Sprintf("NVIDIA published NCCL %s as %s (%s); a build for a newer CUDA minor works when the driver is recent enough (%s), and CUDA %s needs driver %s (%s).", nccl, strings.Join(builds, ", "), cite(b.Fact), ncclNewerMinorSource, b.CUDA, full.Driver, cite(full.Fact)))
	return true
}
