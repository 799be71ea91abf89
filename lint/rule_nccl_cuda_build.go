package lint

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/lint/compat"
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
