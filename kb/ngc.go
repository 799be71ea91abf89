package kb

import (
	"sort"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// NGCImage is one row of ngc-pytorch.tsv or ngc-triton.tsv: an NGC
// container tag and the stack inside it.
type NGCImage struct {
	// Image is the full reference, "nvcr.io/nvidia/pytorch:24.05-py3".
	Image string
	// Repository is the image without its tag ("nvcr.io/nvidia/pytorch").
	Repository string
	// Release is the YY.MM release ("24.05").
	Release string
	// CUDA is the CUDA version in the image (zero when unknown); it may carry
	// a fourth build component ("12.5.0.23").
	CUDA     Version
	CUDAFact Fact
	// NCCL is the NCCL version in the image (zero when unknown; "2.26" when
	// only the series is known).
	NCCL     Version
	NCCLFact Fact
	// MinDriverBranch is the driver branch NVIDIA's release notes require
	// ("driver 545 or later"), 0 when unknown.
	MinDriverBranch int
	MinDriverFact   Fact
	// DatacenterExceptions are the older data-center driver releases NVIDIA
	// lists as able to run the image through forward compatibility
	// ("470.57+ (R470)"), each a minimum within its branch.
	DatacenterExceptions []DriverMinimum
	// ExceptionsKnown is false when the table does not say which exceptions
	// apply (then an older data-center driver may or may not work).
	ExceptionsKnown bool
	// MinComputeCapability is the lowest GPU compute capability the release
	// supports (7.5 from Triton 25.03: no Pascal or Volta); zero when unknown.
	MinComputeCapability Version
	MinCCFact            Fact
	Fact
}

var exceptionToken = lazyre.New(`([0-9]+\.[0-9]+)\+`)

func (kb *KB) loadNGC() error {
	// The NGC image tables share one layout (ngc-triton.tsv adds
	// min_compute_capability).
	for _, name := range []string{"data/ngc-pytorch.tsv", "data/ngc-triton.tsv"} {
		if err := kb.loadNGCFile(name); err != nil {
			return err
		}
	}
	return nil
}

func (kb *KB) loadNGCFile(name string) error {
	t, err := readTable(kb.fsys, name, "release", "image", "cuda", "nccl", "min_driver_branch",
		"datacenter_fwd_compat_exceptions", "status", "notes", "sources")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		img := NGCImage{Image: r.get("image"), Release: r.get("release"), Fact: r.fact(st, "sources", "notes")}
		if !strings.HasSuffix(img.Image, ":"+img.Release+"-py3") {
			return r.errorf("image %q does not carry release %s", img.Image, img.Release)
		}
		img.Repository = strings.TrimSuffix(img.Image, ":"+img.Release+"-py3")
		img.MinCCFact = img.Fact.withStatus(StatusUnknown)
		if cell := r.get("min_compute_capability"); cell != "" {
			cc, ok, err := leadingVersion(cell, false)
			if err != nil {
				return r.errorf("min_compute_capability: %v", err)
			}
			if ok {
				img.MinComputeCapability, img.MinCCFact = cc, img.Fact.withStatus(cellStatus(cell, st))
			}
		}
		for _, c := range []struct {
			col  string
			v    *Version
			f    *Fact
			name string
		}{{"cuda", &img.CUDA, &img.CUDAFact, "cuda"}, {"nccl", &img.NCCL, &img.NCCLFact, "nccl"}} {
			cell := r.get(c.col)
			v, ok, err := leadingVersion(cell, false)
			if err != nil {
				return r.errorf("%s: %v", c.name, err)
			}
			*c.f = img.Fact.withStatus(StatusUnknown)
			if ok {
				*c.v, *c.f = v, img.Fact.withStatus(cellStatus(cell, st))
			}
		}
		cell := r.get("min_driver_branch")
		b, ok, err := leadingVersion(cell, true)
		if err != nil {
			return r.errorf("min_driver_branch: %v", err)
		}
		img.MinDriverFact = img.Fact.withStatus(StatusUnknown)
		if ok {
			if b.Len() != 1 {
				return r.errorf("min_driver_branch %q: want a branch number", cell)
			}
			img.MinDriverBranch, img.MinDriverFact = b.Branch(), img.Fact.withStatus(cellStatus(cell, st))
		}
		cell = r.get("datacenter_fwd_compat_exceptions")
		if !isUnknownCell(cell) && !strings.HasPrefix(cell, "not ") {
			est := cellStatus(cell, st)
			for _, m := range exceptionToken.FindAllStringSubmatch(cell, -1) {
				v, err := ParseDriverVersion(m[1])
				if err != nil {
					return r.errorf("datacenter_fwd_compat_exceptions: %v", err)
				}
				img.DatacenterExceptions = append(img.DatacenterExceptions, DriverMinimum{Driver: v, Fact: img.Fact.withStatus(est)})
			}
			if len(img.DatacenterExceptions) == 0 {
				return r.errorf("datacenter_fwd_compat_exceptions %q: want a list of <version>+ entries", cell)
			}
			img.ExceptionsKnown = true
		}
		key := normalizeImage(img.Image)
		if _, dup := kb.ngc[key]; dup {
			return r.errorf("image %s defined twice", img.Image)
		}
		kb.ngc[key] = img
	}
	return nil
}

// normalizeImage drops a digest ("@sha256:…") and a "docker://" scheme, and
// lower-cases the reference.
func normalizeImage(ref string) string {
	r := strings.ToLower(strings.TrimSpace(ref))
	r = strings.TrimPrefix(r, "docker://")
	if i := strings.IndexByte(r, '@'); i >= 0 {
		r = r[:i]
	}
	return r
}

// IsNGCImage reports whether ref names an image on NVIDIA's NGC registry
// (nvcr.io/nvidia/…), so a rule can say "NGC image not in the knowledge base"
// instead of ignoring it.
func IsNGCImage(ref string) bool {
	return strings.HasPrefix(normalizeImage(ref), "nvcr.io/nvidia/")
}

// NGCImage finds an NGC image by reference ("nvcr.io/nvidia/pytorch:24.05-py3",
// "nvcr.io/nvidia/tritonserver:24.05-py3"; a digest suffix is ignored). The
// knowledge base covers the NGC PyTorch and Triton "-py3" tags; other tags
// (TensorFlow, Triton's -trtllm-python-py3 variants) return ok=false.
func (kb *KB) NGCImage(ref string) (NGCImage, bool) {
	img, ok := kb.ngc[normalizeImage(ref)]
	return img, ok
}

// NGCImages returns every image of the knowledge base, by release.
func (kb *KB) NGCImages() []NGCImage {
	out := make([]NGCImage, 0, len(kb.ngc))
	for _, i := range kb.ngc {
		out = append(out, i)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Release < out[j].Release })
	return out
}

// DriverCheck says whether a host driver can run the image: Yes when the
// driver's branch is at or above MinDriverBranch, or (on data-center GPUs)
// when it meets one of NVIDIA's forward-compatibility exceptions for its
// branch; No when neither holds; Unknown when the table has no minimum
// branch, when the driver floats within an exception's branch, or when a
// data-center GPU's exception list is unknown (an older data-center driver
// may still run the image, so no error may rest on it).
func (img NGCImage) DriverCheck(driver Version, datacenter bool) (Tri, Fact) {
	if img.MinDriverBranch == 0 || driver.IsZero() {
		return Unknown, img.MinDriverFact
	}
	if driver.Branch() >= img.MinDriverBranch {
		return Yes, img.MinDriverFact
	}
	if !datacenter {
		return No, img.MinDriverFact
	}
	if !img.ExceptionsKnown {
		return Unknown, img.MinDriverFact.withStatus(Unconfirmed)
	}
	for _, e := range img.DatacenterExceptions {
		if e.Driver.Branch() == driver.Branch() {
			ans := e.Check(driver)
			return ans, e.Fact.withStatus(e.Status.Weaker(img.MinDriverFact.Status))
		}
	}
	return No, img.MinDriverFact.withStatus(img.MinDriverFact.Status.Weaker(img.DatacenterExceptions[0].Status))
}

// SupportsGPU says whether the image supports a GPU of compute
// capability cc (Yes/No), or Unknown when the table has no minimum.
func (img NGCImage) SupportsGPU(cc Version) (Tri, Fact) {
	if img.MinComputeCapability.IsZero() || cc.IsZero() {
		return Unknown, img.MinCCFact
	}
	if cc.Less(img.MinComputeCapability) {
		return No, img.MinCCFact
	}
	return Yes, img.MinCCFact
}
