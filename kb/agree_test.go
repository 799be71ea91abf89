package kb

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/spec"
)

// The tests in this file check that the tables agree with each other. Where
// the reference data really disagrees, the disagreement is not fixed in the
// data: it is listed here with the reason and source, so that a new
// disagreement fails the test and a known one stays documented.

// knownMissingCUDA are CUDA releases other tables name that cuda-driver.tsv
// lacks.
// None now: CUDA 12.3 Update 2, missing from the reference copy of Table 3,
// was added from NVIDIA's runfile name as a secondary row (data/README.md).
var knownMissingCUDA = map[string]string{}

// knownMissingBranches are driver branches that cuda-driver.tsv implies (a
// toolkit bundles a driver of that branch) but driver-branches.tsv lacks:
// the branch tables come from NVIDIA's data-center support pages
// (https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
// and the sources column of driver-branches.tsv), which list neither R465
// nor R495.
var knownMissingBranches = map[int]string{
	465: "CUDA 11.3 toolkit driver 465.19.01; no data-center branch row",
	495: "CUDA 11.5 toolkit driver 495.29.05; no data-center branch row",
}

// knownBelowMVCFloor are NGC images whose release notes name a driver
// branch below the minor-version-compatibility floor of their CUDA major:
// Triton 25.08-25.12 say "575 or later" for CUDA 13.x, whose floor is R580
// (cuda-mvc.tsv, https://docs.nvidia.com/deeplearning/triton-inference-server/release-notes/rel-25-08.html).
// The rows keep NVIDIA's number as an unconfirmed lead; ImageDriver
// applies the CUDA 13 floor.
var knownBelowMVCFloor = map[string]bool{
	"nvcr.io/nvidia/tritonserver:25.08-py3": true,
	"nvcr.io/nvidia/tritonserver:25.10-py3": true,
	"nvcr.io/nvidia/tritonserver:25.12-py3": true,
}

// knownCCOutsideMatrix are compute capabilities of gpu-models.tsv that the
// architecture matrix does not list (gpu-arch.tsv Blackwell note: 10.3 and
// 12.1 appear on the CUDA GPUs page only).
var knownCCOutsideMatrix = map[string]bool{"10.3": true, "12.1": true}

func TestAgreeNCCLBuildsAreCUDAReleases(t *testing.T) {
	kb := mustKB(t)
	for _, r := range kb.NCCLReleases() {
		for _, b := range r.Builds {
			if _, ok := kb.CUDA(b.CUDA); !ok {
				t.Errorf("NCCL %s has a build for CUDA %s, which cuda-driver.tsv does not list (%s)", r.Version, b.CUDA, b.Where())
			}
		}
	}
}

func TestAgreeCUDAMinDriverMonotonic(t *testing.T) {
	kb := mustKB(t)
	rels := kb.CUDAReleases()
	for i := 1; i < len(rels); i++ {
		prev, cur := rels[i-1].MinDriver, rels[i].MinDriver
		if prev.Driver.IsZero() || cur.Driver.IsZero() {
			continue
		}
		if cur.Driver.Less(prev.Driver) {
			t.Errorf("CUDA %s needs %s, less than CUDA %s's %s (%s)", rels[i].Version, cur.Driver, rels[i-1].Version, prev.Driver, rels[i].Where())
		}
	}
}

func TestAgreeCUDAMVCWithFamilyTable(t *testing.T) {
	kb := mustKB(t)
	first := map[int]CUDARelease{}
	for _, r := range kb.CUDAReleases() {
		m, ok := kb.MVC(r.Version.Major())
		if !ok {
			t.Errorf("CUDA %s: no cuda-mvc.tsv row for %d.x", r.Version, r.Version.Major())
			continue
		}
		if r.MVC.Driver.Compare(m.Min.Driver) != 0 || r.MVCMaxExclusiveBranch != m.MaxExclusiveBranch {
			t.Errorf("CUDA %s MVC %s..%d, cuda-mvc.tsv %d.x says %s..%d", r.Version, r.MVC.Driver, r.MVCMaxExclusiveBranch, m.Major, m.Min.Driver, m.MaxExclusiveBranch)
		}
		if _, seen := first[m.Major]; !seen {
			first[m.Major] = r
		}
	}
	for major, r := range first {
		m, _ := kb.MVC(major)
		if m.LowestToolkitDriver.Compare(r.MinDriver.Driver) != 0 {
			t.Errorf("%d.x lowest toolkit driver %s, but its first release %s needs %s", major, m.LowestToolkitDriver, r.Version, r.MinDriver.Driver)
		}
		// A driver that runs the family through MVC must be at least the
		// branch floor; the first toolkit's own driver must lie in it.
		if m.Min.Check(r.MinDriver.Driver) != Yes {
			t.Errorf("%d.x: first toolkit driver %s is below the MVC floor %s", major, r.MinDriver.Driver, m.Min.Driver)
		}
	}
}

func TestAgreeCUDADriversHaveBranches(t *testing.T) {
	kb := mustKB(t)
	for _, r := range kb.CUDAReleases() {
		if r.MinDriver.Driver.IsZero() {
			continue
		}
		n := r.MinDriver.Driver.Branch()
		if _, ok := kb.Branch(n); !ok && knownMissingBranches[n] == "" {
			t.Errorf("CUDA %s needs driver %s, but R%d is not in driver-branches.tsv", r.Version, r.MinDriver.Driver, n)
		}
	}
	for n := range knownMissingBranches {
		if _, ok := kb.Branch(n); ok {
			t.Errorf("R%d is now in driver-branches.tsv; drop it from knownMissingBranches", n)
		}
	}
}

// TestAgreeBranchSMICUDA checks that the CUDA version a branch's nvidia-smi
// reports is the CUDA release whose toolkit bundles a driver of that branch
// (that is how driver-branches.tsv derives it).
func TestAgreeBranchSMICUDA(t *testing.T) {
	kb := mustKB(t)
	for _, b := range kb.Branches() {
		if b.SMICUDA.IsZero() || !b.SMICUDAFact.Status.CanBeError() && b.SMICUDAFact.Status != Secondary {
			continue
		}
		rel, ok := kb.CUDA(b.SMICUDA)
		if !ok {
			t.Errorf("R%d reports CUDA %s, which cuda-driver.tsv does not list", b.Number, b.SMICUDA)
			continue
		}
		if got := rel.MinDriver.Driver.Branch(); got != b.Number {
			t.Errorf("R%d reports CUDA %s, whose first toolkit driver %s is of R%d", b.Number, b.SMICUDA, rel.MinDriver.Driver, got)
		}
	}
}

func TestAgreeGPUModelsWithArchitectures(t *testing.T) {
	kb := mustKB(t)
	for _, g := range kb.GPUModels() {
		t.Run(g.Name, func(t *testing.T) {
			if g.ComputeCapability.IsZero() {
				return // A10: compute capability not read.
			}
			a, ok := kb.ArchitectureOf(g.ComputeCapability)
			if !ok {
				if !knownCCOutsideMatrix[g.ComputeCapability.String()] {
					t.Errorf("CC %s is not in gpu-arch.tsv", g.ComputeCapability)
				}
				a, ok = kb.ArchitectureNamed(g.Architecture)
				if !ok {
					t.Fatalf("architecture %q is not in gpu-arch.tsv", g.Architecture)
				}
			}
			if a.Name != g.Architecture {
				t.Errorf("model says %s, CC %s is %s in gpu-arch.tsv", g.Architecture, g.ComputeCapability, a.Name)
			}
			if !g.MinCUDA.IsZero() && g.MinCUDA.Less(a.FirstCUDA) {
				t.Errorf("min CUDA %s is below %s's first toolkit %s", g.MinCUDA, a.Name, a.FirstCUDA)
			}
			// A minimum that cannot fail a build may be an observed upper
			// bound below the GA toolkit's driver (B200: NVIDIA's MLPerf
			// system ran R565 with a pre-release CUDA 12.7).
			if !g.MinCUDA.IsZero() && !g.MinDriver.Driver.IsZero() && g.MinDriver.Status.CanBeError() {
				rel, ok := kb.CUDA(g.MinCUDA)
				if !ok {
					t.Fatalf("min CUDA %s not in cuda-driver.tsv", g.MinCUDA)
				}
				if g.MinDriver.Driver.Less(rel.MinDriver.Driver) {
					t.Errorf("min driver %s is below CUDA %s's toolkit driver %s", g.MinDriver.Driver, g.MinCUDA, rel.MinDriver.Driver)
				}
			}
			if !g.MinDriver.Driver.IsZero() {
				if _, ok := kb.DriverBranch(g.MinDriver.Driver); !ok {
					t.Errorf("min driver %s: branch not in driver-branches.tsv", g.MinDriver.Driver)
				}
			}
			// Open modules need Turing (CC 7.5) or newer; pre-Turing GPUs
			// must be proprietary only (facts.tsv open-modules-default).
			turing := ver(t, "7.5")
			if g.ComputeCapability.Less(turing) && g.KernelModules != ProprietaryOnly {
				t.Errorf("CC %s is pre-Turing but kernel modules are %s", g.ComputeCapability, g.KernelModules)
			}
			if !g.ComputeCapability.Less(turing) && g.KernelModules == ProprietaryOnly {
				t.Errorf("CC %s is Turing or newer but proprietary only", g.ComputeCapability)
			}
			// An NVSwitch board needs Fabric Manager (facts.tsv fm-scope).
			if g.NVSwitch == Yes && g.FabricManager != Yes {
				t.Errorf("NVSwitch board without Fabric Manager: %s", g.FabricManager)
			}
		})
	}
	for _, a := range kb.Architectures() {
		if a.LastDriverBranch != 0 {
			if _, ok := kb.Branch(a.LastDriverBranch); !ok {
				t.Errorf("%s: last driver R%d not in driver-branches.tsv", a.Name, a.LastDriverBranch)
			}
		}
	}
}

func TestAgreeGPUAliases(t *testing.T) {
	kb := mustKB(t)
	// Every model is found by its own name, uniquely.
	for _, g := range kb.GPUModels() {
		if got, ok := kb.GPU(g.Name); !ok || got.Name != g.Name {
			t.Errorf("GPU(%q) = %q ok=%v", g.Name, got.Name, ok)
		}
	}
	// An NVML name must name one model, never a family.
	for alias, idx := range kb.aliases {
		if strings.Contains(alias, "GB") && len(idx) > 1 && alias != NormalizeGPUName("A100 80GB") {
			t.Errorf("alias %q with a memory size names %d models", alias, len(idx))
		}
	}
}

func TestAgreeNGCWithCUDAAndNCCL(t *testing.T) {
	kb := mustKB(t)
	for _, img := range kb.NGCImages() {
		t.Run(img.Image, func(t *testing.T) {
			if !img.CUDA.IsZero() {
				if _, ok := kb.CUDA(img.CUDA); !ok && knownMissingCUDA[img.CUDA.Truncate(3).String()] == "" {
					t.Errorf("CUDA %s not in cuda-driver.tsv", img.CUDA)
				}
			}
			if !img.NCCL.IsZero() {
				found := false
				for _, r := range kb.NCCLReleases() {
					found = found || r.Version.Within(img.NCCL)
				}
				if !found {
					t.Errorf("NCCL %s not in nccl-cuda.tsv", img.NCCL)
				}
				// The image's NCCL must have a build that runs under the
				// image's CUDA (builds for an older minor of the same
				// major are fine: CUDA minor version compatibility, as
				// NGC PyTorch 25.12 ships; see NCCLUsableBuild).
				if img.NCCL.IsExact() && !img.CUDA.IsZero() {
					a, ok := kb.NCCLUsableBuild(img.NCCL, img.CUDA)
					if ok && a.Available == No {
						t.Errorf("NCCL %s has no build usable with CUDA %s (%s)", img.NCCL, img.CUDA, a.Where())
					}
				}
			}
			if img.MinDriverBranch != 0 && !img.CUDA.IsZero() {
				m, ok := kb.MVC(img.CUDA.Major())
				if !ok {
					t.Fatalf("no MVC row for CUDA %d", img.CUDA.Major())
				}
				if img.MinDriverBranch < m.Min.Driver.Branch() && (!knownBelowMVCFloor[img.Image] || img.MinDriverFact.Status.CanBeError()) {
					t.Errorf("min driver R%d is below CUDA %d.x's MVC floor R%s", img.MinDriverBranch, img.CUDA.Major(), m.Min.Driver)
				}
				if _, ok := kb.Branch(img.MinDriverBranch); !ok {
					t.Errorf("min driver R%d not in driver-branches.tsv", img.MinDriverBranch)
				}
			}
			if !img.MinComputeCapability.IsZero() {
				if _, ok := kb.ArchitectureOf(img.MinComputeCapability); !ok {
					t.Errorf("minimum CC %s is not in gpu-arch.tsv", img.MinComputeCapability)
				}
			}
			for _, e := range img.DatacenterExceptions {
				if e.Driver.Branch() > img.MinDriverBranch && img.MinDriverBranch != 0 {
					t.Errorf("exception %s is above the minimum branch R%d", e.Driver, img.MinDriverBranch)
				}
				if _, ok := kb.DriverBranch(e.Driver); !ok {
					t.Errorf("exception %s: branch not in driver-branches.tsv", e.Driver)
				}
			}
		})
	}
}

func TestAgreeDCGMWithMVC(t *testing.T) {
	kb := mustKB(t)
	for _, d := range kb.dcgm {
		if !strings.HasPrefix(d.Flavor, "cuda") {
			continue
		}
		var major int
		if _, err := fmt.Sscanf(d.Flavor, "cuda%d", &major); err != nil {
			t.Fatalf("flavor %q: %v", d.Flavor, err)
		}
		m, ok := kb.MVC(major)
		if !ok {
			t.Errorf("DCGM flavour %s: no cuda-mvc.tsv row", d.Flavor)
			continue
		}
		if d.MinDriver.Driver.Compare(m.Min.Driver) != 0 {
			t.Errorf("DCGM %d %s needs %s, CUDA %d.x MVC floor is %s", d.Major, d.Flavor, d.MinDriver.Driver, major, m.Min.Driver)
		}
		if name, _ := kb.PackageName(spec.ComponentDCGM, Debian, d.Flavor, ver(t, "4.6.0")); name == "" {
			t.Errorf("no package name for DCGM 4 %s", d.Flavor)
		}
	}
}

func TestAgreeToolkitFeaturesAreReleases(t *testing.T) {
	kb := mustKB(t)
	oldest := kb.ContainerToolkitReleases()[0].Version
	for name, f := range kb.features {
		if f.MinToolkit.IsZero() || f.MinToolkit.Less(oldest) {
			continue // 1.12.0 predates the release table, which starts at 1.14.0.
		}
		if _, ok := kb.ContainerToolkit(f.MinToolkit); !ok {
			t.Errorf("feature %s starts at %s, which container-toolkit.tsv does not list", name, f.MinToolkit)
		}
	}
}

func TestAgreeKnownListsStillNeeded(t *testing.T) {
	kb := mustKB(t)
	for ref := range knownBelowMVCFloor {
		img, ok := kb.NGCImage(ref)
		if !ok {
			t.Errorf("%s is no longer in the data; drop it from knownBelowMVCFloor", ref)
			continue
		}
		if m, _ := kb.MVC(img.CUDA.Major()); img.MinDriverBranch >= m.Min.Driver.Branch() {
			t.Errorf("%s no longer disagrees with the MVC floor; drop it", ref)
		}
	}
	for v := range knownMissingCUDA {
		if _, ok := kb.CUDA(ver(t, v)); ok {
			t.Errorf("CUDA %s is now in cuda-driver.tsv; drop it from knownMissingCUDA", v)
		}
	}
}
