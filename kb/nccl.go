package kb

import (
	"sort"
	"strings"
)

// NCCLBuild is one published NCCL package or tarball build for a CUDA
// major.minor (libnccl2 2.21.5-1+cuda12.4 is the 12.4 build of 2.21.5).
type NCCLBuild struct {
	// CUDA is the major.minor the build targets.
	CUDA Version
	Fact
}

// NCCLRelease is one row of nccl-cuda.tsv.
type NCCLRelease struct {
	// Version is the NCCL release ("2.21.5").
	Version Version
	// Tag and Date are the upstream git tag and its commit date.
	Tag, Date string
	// Builds are the CUDA builds seen for the release, each with its status.
	Builds []NCCLBuild
	// Complete is true when Builds is known to be every build NVIDIA
	// published (for example "only two CUDA builds per architecture"), so a
	// build that is not listed does not exist. CompleteFact says how sure.
	Complete     bool
	CompleteFact Fact
	Fact
}

// NCCLBuildAnswer answers "is there an NCCL X build for CUDA Y?".
type NCCLBuildAnswer struct {
	// Available is Yes when a build is listed, No when the release's build
	// list is complete and has none, Unknown otherwise.
	Available Tri
	// Build is the matching build when Available is Yes.
	Build NCCLBuild
	// Fact is what the answer rests on: the build's fact for Yes, the
	// completeness fact for No, the release row (unconfirmed) for Unknown.
	Fact
}

func (kb *KB) loadNCCL() error {
	t, err := readTable(kb.fsys, "data/nccl-cuda.tsv", "nccl_version", "git_tag", "tag_date", "cuda_builds_observed",
		"cuda_builds_status", "notes", "sources", "kb_builds", "kb_builds_complete")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("cuda_builds_status")
		if err != nil {
			return err
		}
		v, err := ParseVersion(r.get("nccl_version"))
		if err != nil || !v.IsExact() {
			return r.errorf("nccl_version %q: want x.y.z", r.get("nccl_version"))
		}
		rel := NCCLRelease{Version: v, Tag: r.get("git_tag"), Date: r.get("tag_date"), Fact: r.fact(st, "sources", "notes")}
		for _, b := range strings.Fields(r.get("kb_builds")) {
			val, bst, err := parseAt(b)
			if err != nil {
				return r.errorf("kb_builds: %v", err)
			}
			cv, err := ParseVersion(val)
			if err != nil || cv.Len() != 2 {
				return r.errorf("kb_builds %q: want major.minor@status", b)
			}
			// The build's status cannot be stronger than the evidence the
			// row's prose cites for it; a build absent from the prose is a
			// data error.
			if !strings.Contains(r.get("cuda_builds_observed"), "cuda"+val) && !strings.Contains(r.get("cuda_builds_observed"), "+cuda"+val) {
				return r.errorf("kb_builds names cuda%s, which cuda_builds_observed does not mention", val)
			}
			rel.Builds = append(rel.Builds, NCCLBuild{CUDA: cv, Fact: rel.Fact.withStatus(bst)})
		}
		if c := r.get("kb_builds_complete"); c != "no" {
			val, cst, err := parseAt(c)
			if err != nil || val != "yes" {
				return r.errorf("kb_builds_complete %q: want no or yes@status", c)
			}
			rel.Complete, rel.CompleteFact = true, rel.Fact.withStatus(cst)
		}
		for _, o := range kb.nccl {
			if o.Version.Compare(v) == 0 {
				return r.errorf("NCCL %s already defined at line %d", v, o.Line)
			}
		}
		kb.nccl = append(kb.nccl, rel)
	}
	sort.Slice(kb.nccl, func(i, j int) bool { return kb.nccl[i].Version.Less(kb.nccl[j].Version) })
	return nil
}

// NCCLReleases returns every NCCL release of the knowledge base, oldest first.
func (kb *KB) NCCLReleases() []NCCLRelease {
	return append([]NCCLRelease(nil), kb.nccl...)
}

// NCCL finds an NCCL release by exact version ("2.21.5"; a package version
// such as "2.21.5-1+cuda12.4" must be split by the caller, see
// ParseNCCLPackageVersion).
func (kb *KB) NCCL(v Version) (NCCLRelease, bool) {
	for _, r := range kb.nccl {
		if r.Version.Compare(v) == 0 && v.Len() == 3 {
			return r, true
		}
	}
	return NCCLRelease{}, false
}

// NCCLBuildFor answers "is there an NCCL nccl build for exactly CUDA
// major.minor of cuda?", which is what an apt/dnf pin such as
// libnccl2=2.28.9-1+cuda13.1 needs. ok is false when the NCCL release is not
// in the knowledge base.
func (kb *KB) NCCLBuildFor(nccl, cuda Version) (NCCLBuildAnswer, bool) {
	rel, ok := kb.NCCL(nccl)
	if !ok {
		return NCCLBuildAnswer{}, false
	}
	mm := cuda.Truncate(2)
	for _, b := range rel.Builds {
		if b.CUDA.Compare(mm) == 0 && mm.Len() == 2 {
			return NCCLBuildAnswer{Available: Yes, Build: b, Fact: b.Fact}, true
		}
	}
	return rel.absent(), true
}

// NCCLUsableBuild answers "can NCCL nccl run with CUDA cuda?" the way NVIDIA
// ships it: a build for the same CUDA major and an equal or older minor works
// through CUDA minor version compatibility (NGC PyTorch 25.12 ships NCCL
// 2.28.9's CUDA 13.0 build in a CUDA 13.1 image, ngc-pytorch.tsv), so NCCL
// is compared by version, not by its +cudaX.Y tag. It returns the build
// with the highest such minor. ok is false when the release is unknown.
func (kb *KB) NCCLUsableBuild(nccl, cuda Version) (NCCLBuildAnswer, bool) {
	rel, ok := kb.NCCL(nccl)
	if !ok {
		return NCCLBuildAnswer{}, false
	}
	var best *NCCLBuild
	for i, b := range rel.Builds {
		if b.CUDA.Major() != cuda.Major() || b.CUDA.Minor() > cuda.Minor() {
			continue
		}
		if best == nil || best.CUDA.Less(b.CUDA) || (best.CUDA.Compare(b.CUDA) == 0 && best.Status < b.Status) {
			best = &rel.Builds[i]
		}
	}
	if best != nil {
		return NCCLBuildAnswer{Available: Yes, Build: *best, Fact: best.Fact}, true
	}
	return rel.absent(), true
}

// absent is the answer when no listed build fits.
func (rel NCCLRelease) absent() NCCLBuildAnswer {
	if rel.Complete {
		return NCCLBuildAnswer{Available: No, Fact: rel.CompleteFact}
	}
	return NCCLBuildAnswer{Available: Unknown, Fact: rel.Fact.withStatus(Unconfirmed)}
}

// ParseNCCLPackageVersion splits an NCCL package version as NVIDIA's repos
// write it, "2.21.5-1+cuda12.4", into the NCCL release and the CUDA
// major.minor of the build. A bare "2.21.5" returns a zero CUDA.
func ParseNCCLPackageVersion(s string) (nccl, cuda Version, err error) {
	rest := strings.TrimSpace(s)
	var cudaPart string
	if i := strings.Index(rest, "+cuda"); i >= 0 {
		rest, cudaPart = rest[:i], rest[i+len("+cuda"):]
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		rest = rest[:i]
	}
	nccl, err = ParseVersion(rest)
	if err != nil {
		return Version{}, Version{}, err
	}
	if cudaPart != "" {
		cuda, err = ParseVersion(cudaPart)
		if err != nil {
			return Version{}, Version{}, err
		}
	}
	return nccl, cuda, nil
}
