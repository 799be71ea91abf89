package kb

import "strconv"

// GPUClass says whether CUDA forward compatibility can apply to a GPU,
// which decides whether an NGC image's forward-compatibility exceptions
// ("525.85+") count for it.
type GPUClass int

const (
	// GPUClassUnknown: the GPU is not known, or the knowledge base does not
	// say whether forward compatibility applies to it.
	GPUClassUnknown GPUClass = iota
	// GPUClassDatacenter: a data-center GPU, where forward compatibility
	// applies.
	GPUClassDatacenter
	// GPUClassOther: a GPU without forward compatibility.
	GPUClassOther
)

// String names the class for messages.
func (c GPUClass) String() string {
	switch c {
	case GPUClassDatacenter:
		return "data-center GPU"
	case GPUClassOther:
		return "GPU without forward compatibility"
	}
	return "GPU of unknown class"
}

// GPUClassOf answers for a GPU name (model, alias or family); a family name
// answers only when all its parts agree.
func (kb *KB) GPUClassOf(name string) (GPUClass, Fact) {
	cands := kb.GPUCandidates(name)
	if len(cands) == 0 {
		return GPUClassUnknown, Fact{Status: StatusUnknown}
	}
	var class GPUClass
	var f Fact
	for i, g := range cands {
		c := GPUClassUnknown
		switch g.ForwardCompat {
		case Yes:
			c = GPUClassDatacenter
		case No:
			c = GPUClassOther
		}
		if i == 0 {
			class, f = c, g.ForwardCompatFact
			continue
		}
		if c != class {
			return GPUClassUnknown, Fact{Status: StatusUnknown}
		}
		f = f.withStatus(f.Status.Weaker(g.ForwardCompatFact.Status))
	}
	if !f.Status.CanBeError() {
		// A weakly sourced class is no class: an error may not rest on it.
		return GPUClassUnknown, f
	}
	return class, f
}

// Verdict is what a rule does with an answer: nothing, a warning, an error.
type Verdict int

const (
	// VerdictNone: nothing to report.
	VerdictNone Verdict = iota
	// VerdictWarning: may fail, or fails on facts that may not fail a build.
	VerdictWarning
	// VerdictError: fails, on facts that may fail a build.
	VerdictError
)

// String names the verdict.
func (v Verdict) String() string {
	return [...]string{"nothing", "warning", "error"}[v]
}

// ImageDriverReason says which requirement an answer is about.
type ImageDriverReason int

const (
	// ReasonMet: the driver meets every requirement the tables know.
	ReasonMet ImageDriverReason = iota
	// ReasonBelowBranch: the driver is below the branch NVIDIA's release
	// notes ask for.
	ReasonBelowBranch
	// ReasonBelowCUDAFloor: the driver meets the release notes' branch but
	// not the minor-version-compatibility floor of the image's CUDA major.
	ReasonBelowCUDAFloor
)

// ImageDriverAnswer is the one decision on an image, a driver and a GPU
// class that lint, plan and verify share.
type ImageDriverAnswer struct {
	Verdict Verdict
	Reason  ImageDriverReason
	// Floor is the requirement the driver misses: the release notes' branch
	// (Reason BelowBranch) or the CUDA major's floor (BelowCUDAFloor).
	Floor DriverMinimum
	// Exception is the forward-compatibility exception of the driver's
	// branch when there is one.
	Exception    DriverMinimum
	HasException bool
	// ExceptionsUnknown is true when a data-center GPU might run the image
	// through an exception the table does not list.
	ExceptionsUnknown bool
	// Class is the GPU class the answer was computed for.
	Class GPUClass
	// Fact is the weakest fact the verdict rests on.
	Fact Fact
}

// ImageDriver decides whether a driver runs an NGC image on a GPU of the
// given class, honouring the status of every fact it uses:
//
//   - On a GPU without forward compatibility the driver must meet both the
//     release notes' branch and the CUDA major's minor-version floor.
//   - On a data-center GPU a driver below them may still run the image
//     through a forward-compatibility exception of its branch; when the
//     exception list is unknown, or weakly sourced, the answer is a warning.
//   - On a GPU of unknown class the answer is the one both classes give, or
//     a warning where they differ.
//
// An error rests only on facts whose status allows one (Fact.CanBeError).
func (kb *KB) ImageDriver(img NGCImage, driver Version, class GPUClass) ImageDriverAnswer {
	if class == GPUClassUnknown {
		dc := kb.imageDriver(img, driver, GPUClassDatacenter)
		ot := kb.imageDriver(img, driver, GPUClassOther)
		ans := ot
		if dc.Verdict != ot.Verdict {
			ans.Verdict = VerdictWarning
			ans.Exception, ans.HasException, ans.ExceptionsUnknown = dc.Exception, dc.HasException, dc.ExceptionsUnknown
			if dc.Fact.Status.Weaker(ot.Fact.Status) == dc.Fact.Status {
				ans.Fact = dc.Fact
			}
		}
		ans.Class = GPUClassUnknown
		return ans
	}
	return kb.imageDriver(img, driver, class)
}

func (kb *KB) imageDriver(img NGCImage, driver Version, class GPUClass) ImageDriverAnswer {
	ans := ImageDriverAnswer{Class: class, Fact: img.MinDriverFact}
	if driver.IsZero() {
		return ans
	}
	// Which requirement fails, and on which fact.
	switch {
	case img.MinDriverBranch > 0 && driver.Branch() < img.MinDriverBranch:
		ans.Reason = ReasonBelowBranch
		b, _ := ParseDriverVersion(strconv.Itoa(img.MinDriverBranch))
		ans.Floor = DriverMinimum{Driver: b, Fact: img.MinDriverFact}
		// A confirmed CUDA floor that also fails makes the failure at least
		// that strong.
		if m, ok := kb.imageCUDAFloor(img); ok && m.Check(driver) == No && m.Status.CanBeError() && !ans.Floor.Status.CanBeError() {
			ans.Floor = m
		}
	default:
		m, ok := kb.imageCUDAFloor(img)
		if !ok || m.Check(driver) != No {
			return ans
		}
		ans.Reason, ans.Floor = ReasonBelowCUDAFloor, m
	}
	ans.Fact = ans.Floor.Fact
	if class == GPUClassOther {
		ans.Verdict = verdictOn(ans.Fact)
		return ans
	}
	if !img.ExceptionsKnown {
		ans.ExceptionsUnknown = true
		ans.Verdict, ans.Fact = VerdictWarning, img.MinDriverFact.withStatus(Unconfirmed)
		return ans
	}
	listFact := img.DatacenterExceptions[0].Fact
	for _, e := range img.DatacenterExceptions {
		if e.Driver.Branch() != driver.Branch() {
			continue
		}
		ans.Exception, ans.HasException = e, true
		switch e.Check(driver) {
		case Yes:
			if e.Status.CanBeError() {
				ans.Verdict, ans.Reason, ans.Fact = VerdictNone, ReasonMet, e.Fact
				return ans
			}
			ans.Verdict, ans.Fact = VerdictWarning, e.Fact
			return ans
		case Unknown:
			ans.Verdict, ans.Fact = VerdictWarning, e.Fact
			return ans
		}
		break
	}
	ans.Fact = ans.Fact.withStatus(ans.Fact.Status.Weaker(listFact.Status))
	ans.Verdict = verdictOn(ans.Fact)
	return ans
}

// imageCUDAFloor is the minor-version-compatibility floor of the image's
// CUDA major (cuda-mvc.tsv).
func (kb *KB) imageCUDAFloor(img NGCImage) (DriverMinimum, bool) {
	if img.CUDA.IsZero() {
		return DriverMinimum{}, false
	}
	m, ok := kb.MVC(img.CUDA.Major())
	if !ok || m.Min.Driver.IsZero() {
		return DriverMinimum{}, false
	}
	return m.Min, true
}

func verdictOn(f Fact) Verdict {
	if f.Status.CanBeError() {
		return VerdictError
	}
	return VerdictWarning
}
