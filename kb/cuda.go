package kb

import (
	"sort"
	"strings"
)

// DriverMinimum is the lowest driver that satisfies a requirement. Driver is
// either an exact release ("550.54.15") or a bare branch ("525", meaning any
// release of R525 or later).
type DriverMinimum struct {
	// Driver is the minimum; a one-component value is a branch floor.
	Driver Version
	Fact
}

// Check says whether driver meets the minimum: Yes, No, or Unknown when the
// answer depends on a release the spec does not pin (a floating "550" against
// a minimum of 550.54.15) or when no minimum is known.
func (m DriverMinimum) Check(driver Version) Tri {
	if m.Driver.IsZero() || driver.IsZero() {
		return Unknown
	}
	db, mb := driver.Branch(), m.Driver.Branch()
	switch {
	case db > mb:
		return Yes
	case db < mb:
		return No
	case m.Driver.Len() == 1:
		// Same branch, and the minimum is the branch itself.
		return Yes
	case driver.Len() == 1:
		// "550" against 550.54.15: depends on which 550 release installs.
		return Unknown
	case driver.Compare(m.Driver) >= 0:
		return Yes
	}
	return No
}

// CUDARelease is one CUDA toolkit release of cuda-driver.tsv.
type CUDARelease struct {
	// Version is the release as installed: 12.4.1 for "12.4 Update 1".
	Version Version
	// Label is NVIDIA's name of the release ("12.4 Update 1").
	Label string
	// MinDriver is the Linux x86_64 toolkit driver (full compatibility);
	// MinDriver.Driver is zero when the table does not state it.
	MinDriver DriverMinimum
	// MVC is the minor-version-compatibility floor for Linux (a branch).
	MVC DriverMinimum
	// MVCMaxExclusiveBranch is the first branch outside the MVC range, 0
	// when open-ended; newer drivers still run it by backward compatibility.
	MVCMaxExclusiveBranch int
	Fact
}

// MVCRange is a row of cuda-mvc.tsv: the driver range in which every toolkit
// of a CUDA major runs through minor version compatibility.
type MVCRange struct {
	// Major is the CUDA major (12 for "12.x").
	Major int
	// Min is the lowest branch of the range.
	Min DriverMinimum
	// MaxExclusiveBranch is the first branch above the range, 0 if none.
	MaxExclusiveBranch int
	// LowestToolkitDriver is the toolkit driver of the family's first release.
	LowestToolkitDriver Version
	Fact
}

func (kb *KB) loadCUDA() error {
	t, err := readTable(kb.fsys, "data/cuda-driver.tsv", "cuda_release", "major_minor", "toolkit_driver_min_linux_x86_64",
		"mvc_driver_min_linux", "mvc_driver_max_exclusive_linux", "status", "source", "notes", "kb_version")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		v, err := ParseVersion(r.get("kb_version"))
		if err != nil || !v.IsExact() {
			return r.errorf("kb_version %q: want an exact CUDA release (%v)", r.get("kb_version"), err)
		}
		mm, err := ParseVersion(r.get("major_minor"))
		if err != nil || !v.Within(mm) {
			return r.errorf("major_minor %q does not contain kb_version %s", r.get("major_minor"), v)
		}
		rel := CUDARelease{Version: v, Label: r.get("cuda_release"), Fact: r.fact(st, "source", "notes")}
		cell := r.get("toolkit_driver_min_linux_x86_64")
		d, ok, err := leadingVersion(cell, true)
		if err != nil {
			return r.errorf("toolkit_driver_min_linux_x86_64: %v", err)
		}
		if ok {
			rel.MinDriver = DriverMinimum{Driver: d, Fact: rel.Fact.withStatus(cellStatus(cell, st))}
		} else {
			rel.MinDriver = DriverMinimum{Fact: rel.Fact.withStatus(StatusUnknown)}
		}
		mvc, ok, err := leadingVersion(r.get("mvc_driver_min_linux"), true)
		if err != nil || !ok {
			return r.errorf("mvc_driver_min_linux %q: want >=<branch> (%v)", r.get("mvc_driver_min_linux"), err)
		}
		rel.MVC = DriverMinimum{Driver: mvc, Fact: rel.Fact}
		if mx := r.get("mvc_driver_max_exclusive_linux"); mx != "none" {
			x, ok, err := leadingVersion(mx, true)
			if err != nil || !ok {
				return r.errorf("mvc_driver_max_exclusive_linux %q: want a branch or none (%v)", mx, err)
			}
			rel.MVCMaxExclusiveBranch = x.Branch()
		}
		for _, old := range kb.cuda {
			if old.Version.Compare(v) == 0 {
				return r.errorf("CUDA %s already defined at line %d", v, old.Line)
			}
		}
		kb.cuda = append(kb.cuda, rel)
	}
	sort.Slice(kb.cuda, func(i, j int) bool { return kb.cuda[i].Version.Less(kb.cuda[j].Version) })

	t, err = readTable(kb.fsys, "data/cuda-mvc.tsv", "cuda_major", "mvc_driver_min_linux", "mvc_driver_max_exclusive_linux",
		"lowest_toolkit_driver_in_family_linux", "status", "source", "notes")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		major, err := ParseVersion(strings.TrimSuffix(r.get("cuda_major"), ".x"))
		if err != nil || major.Len() != 1 {
			return r.errorf("cuda_major %q: want N.x", r.get("cuda_major"))
		}
		f := r.fact(st, "source", "notes")
		m := MVCRange{Major: major.Major(), Fact: f}
		mn, ok, err := leadingVersion(r.get("mvc_driver_min_linux"), true)
		if err != nil || !ok {
			return r.errorf("mvc_driver_min_linux %q: %v", r.get("mvc_driver_min_linux"), err)
		}
		m.Min = DriverMinimum{Driver: mn, Fact: f}
		if mx := r.get("mvc_driver_max_exclusive_linux"); !strings.HasPrefix(mx, "none") {
			x, ok, err := leadingVersion(mx, true)
			if err != nil || !ok {
				return r.errorf("mvc_driver_max_exclusive_linux %q: %v", mx, err)
			}
			m.MaxExclusiveBranch = x.Branch()
		}
		lt, ok, err := leadingVersion(r.get("lowest_toolkit_driver_in_family_linux"), true)
		if err != nil || !ok {
			return r.errorf("lowest_toolkit_driver_in_family_linux: %v", err)
		}
		m.LowestToolkitDriver = lt
		if _, dup := kb.mvc[m.Major]; dup {
			return r.errorf("CUDA %d.x defined twice", m.Major)
		}
		kb.mvc[m.Major] = m
	}
	return nil
}

// CUDAReleases returns every CUDA release of the knowledge base, oldest first.
// The slice is a copy.
func (kb *KB) CUDAReleases() []CUDARelease {
	return append([]CUDARelease(nil), kb.cuda...)
}

// CUDA finds a CUDA toolkit release. An exact version ("12.4.1"; a fourth
// build component as in NGC's "12.5.0.23" is ignored) must match a release of
// the table. A major.minor ("12.4") floats over its updates and returns the
// series' first release, whose requirements are the lowest, so a rule errs only
// when every release of the series would fail. ok is false when the version
// is not in the knowledge base (for example newer than the table).
func (kb *KB) CUDA(v Version) (CUDARelease, bool) {
	switch {
	case v.Len() >= 3:
		v = v.Truncate(3)
		for _, r := range kb.cuda {
			if r.Version.Compare(v) == 0 {
				return r, true
			}
		}
	case v.Len() == 2:
		for _, r := range kb.cuda {
			if r.Version.Within(v) {
				return r, true
			}
		}
	}
	return CUDARelease{}, false
}

// CUDAMinDriver returns the Linux driver a CUDA toolkit needs for full
// compatibility (CUDA release notes Table 3). ok is false when the release is
// not in the knowledge base or its table row states no driver (the Fact then
// still tells which, through its Note and Status).
func (kb *KB) CUDAMinDriver(cuda Version) (DriverMinimum, bool) {
	r, ok := kb.CUDA(cuda)
	if !ok {
		return DriverMinimum{}, false
	}
	return r.MinDriver, !r.MinDriver.Driver.IsZero()
}

// CUDAMinDriverMVC returns the lowest driver branch that runs applications
// built with this CUDA release through minor version compatibility (Linux;
// limited feature set, see NVIDIA's CUDA Compatibility guide). ok is false
// when the release is not in the knowledge base.
func (kb *KB) CUDAMinDriverMVC(cuda Version) (DriverMinimum, bool) {
	r, ok := kb.CUDA(cuda)
	if !ok {
		return DriverMinimum{}, false
	}
	return r.MVC, true
}

// MVC returns the minor-version-compatibility range of a CUDA major.
func (kb *KB) MVC(cudaMajor int) (MVCRange, bool) {
	m, ok := kb.mvc[cudaMajor]
	return m, ok
}
