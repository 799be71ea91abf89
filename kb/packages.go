package kb

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/spec"
)

// tableComponent reads a component as the package tables name it
// (spec.Component.PackageTable: "cuda-toolkit", "container-toolkit").
func tableComponent(r row, column string) (spec.Component, error) {
	name := r.get(column)
	names := append([]string(nil), AuxPackages...)
	for _, c := range spec.Components() {
		if c.PackageTable() == name {
			return c, nil
		}
		names = append(names, c.PackageTable())
	}
	return "", r.errorf("%s %q is not a component or a package that travels with one.%s", column, name, spec.DidYouMean(name, names))
}

// AuxPackages are the kb_component names of packages.tsv that are no
// spec component (no lock-file pin of their own) but a package that
// travels with one: "imex", the IMEX service, installed at the driver's
// release.
var AuxPackages = []string{AuxIMEX}

// AuxIMEX is packages.tsv's kb_component of NVIDIA IMEX.
const AuxIMEX = "imex"

// DistroFamily is a family of Linux distributions that share NVIDIA's
// package names.
type DistroFamily string

// Distro families of packages.tsv.
const (
	// Debian covers Debian and Ubuntu with NVIDIA's CUDA apt repository.
	Debian DistroFamily = "debian"
	// RHEL covers RHEL and its rebuilds with NVIDIA's CUDA dnf repository.
	RHEL DistroFamily = "rhel"
)

// ParseDistroFamily maps a distribution id (as in /etc/os-release ID or
// ID_LIKE: "ubuntu", "debian", "rhel", "rocky", "almalinux", "centos",
// "fedora") to its family.
func ParseDistroFamily(id string) (DistroFamily, bool) {
	switch strings.ToLower(strings.TrimSpace(id)) {
	case "ubuntu", "debian":
		return Debian, true
	case "rhel", "rocky", "almalinux", "centos", "fedora", "ol":
		return RHEL, true
	}
	return "", false
}

// PackageQuery asks for the package of a component.
type PackageQuery struct {
	// Component is what to install. The driver's flavour is "open" or
	// "proprietary"; the CUDA toolkit is named by major and minor; NCCL is
	// built per CUDA major.minor; DCGM 4 per CUDA major.
	Component spec.Component
	// Family is the distribution family whose repositories hold it.
	Family DistroFamily
	// Flavour: for the driver "open" or "proprietary"; for DCGM 4 nothing
	// (CUDA picks the package); empty otherwise.
	Flavour string
	// Version is the component's own version: the driver release or branch,
	// the CUDA toolkit, the NCCL, DCGM or container toolkit release.
	Version Version
	// CUDA is the CUDA major.minor a build targets (NCCL) or the CUDA major
	// of a DCGM 4 package.
	CUDA Version
}

// Package is a resolved package: its name, its full version string when the
// format is known, and an extra package or module stream that holds the
// driver branch (nvidia-driver-pinning-550, nvidia-driver:550-open).
type Package struct {
	// Name is the package to install ("libnccl2").
	Name string
	// VersionString is "" when the table gives no confirmed format.
	VersionString string
	// Pin is "" when the component needs none.
	Pin string
	// NameFact and VersionFact are the facts behind the name (and pin) and
	// behind the version string.
	NameFact    Fact
	VersionFact Fact
}

// packageRow is a packages.tsv row with gpuform's kb_ columns.
type packageRow struct {
	component  spec.Component
	family     DistroFamily
	flavour    string
	name, pin  string
	version    string
	nameFact   Fact
	pinFact    Fact
	formatFact Fact
}

func (kb *KB) loadPackages() error {
	t, err := readTable(kb.fsys, "data/packages.tsv", "distro_family", "component", "package_name_pattern", "status",
		"sources", "kb_component", "kb_family", "kb_flavour", "kb_name", "kb_pin", "kb_version_format")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		if _, err := r.status("status"); err != nil {
			return err
		}
		if r.get("kb_component") == "" {
			continue
		}
		var comp spec.Component
		aux := slices.Contains(AuxPackages, r.get("kb_component"))
		if aux {
			comp = spec.Component(r.get("kb_component"))
		} else if comp, err = tableComponent(r, "kb_component"); err != nil {
			return err
		}
		p := packageRow{component: comp, family: DistroFamily(r.get("kb_family")), flavour: r.get("kb_flavour")}
		if p.family != Debian && p.family != RHEL {
			return r.errorf("kb_family %q is not debian or rhel", p.family)
		}
		f := r.fact(StatusUnknown, "sources", "version_format_notes")
		var st Status
		if p.name, st, err = parseAt(r.get("kb_name")); err != nil || p.name == "" {
			return r.errorf("kb_name %q: want name@status (%v)", r.get("kb_name"), err)
		}
		p.nameFact = f.withStatus(st)
		if p.pin, st, err = parseAt(r.get("kb_pin")); err != nil {
			return r.errorf("kb_pin: %v", err)
		}
		p.pinFact = f.withStatus(st)
		if p.version, st, err = parseAt(r.get("kb_version_format")); err != nil {
			return r.errorf("kb_version_format: %v", err)
		}
		p.formatFact = f.withStatus(st)
		// The name must be the pattern of the row's own prose, so the kb_
		// column cannot drift from what the source says.
		stem := p.name
		if i := strings.IndexByte(stem, '{'); i >= 0 {
			stem = stem[:i]
		}
		if !strings.Contains(r.get("package_name_pattern"), stem) {
			return r.errorf("kb_name %q does not restate package_name_pattern %q", p.name, r.get("package_name_pattern"))
		}
		for _, o := range append(kb.packages, kb.auxPackages...) {
			if o.component == p.component && o.family == p.family && o.flavour == p.flavour {
				return r.errorf("package %s/%s/%s defined twice", p.component, p.family, p.flavour)
			}
		}
		if aux {
			kb.auxPackages = append(kb.auxPackages, p)
			continue
		}
		kb.packages = append(kb.packages, p)
	}
	return nil
}

// Package resolves the package of a component on a distro family. ok is
// false when the knowledge base has no name for it (no row, or a value the
// template needs is missing, such as the CUDA version of an NCCL package).
func (kb *KB) Package(q PackageQuery) (Package, bool) {
	flavour := strings.ToLower(q.Flavour)
	if q.Component == spec.ComponentDCGM && flavour == "" {
		flavour = "dcgm" + strconv.Itoa(q.Version.Major())
	}
	for _, p := range kb.packages {
		if p.component != q.Component || p.family != q.Family || p.flavour != flavour {
			continue
		}
		name, err := expand(p.name, q)
		if err != nil {
			return Package{}, false
		}
		out := Package{Name: name, NameFact: p.nameFact, VersionFact: p.formatFact.withStatus(StatusUnknown)}
		if p.pin != "" {
			if out.Pin, err = expand(p.pin, q); err != nil {
				return Package{}, false
			}
		}
		if p.version != "" && q.Version.IsExact() {
			if vs, err := expand(p.version, q); err == nil {
				out.VersionString, out.VersionFact = vs, p.formatFact
			}
		}
		return out, true
	}
	return Package{}, false
}

// AuxPackage resolves a package that travels with a component (aux, one
// of AuxPackages: "imex") on a distro family, at version v (the driver's
// release for IMEX). An aux name the table does not know is an error with
// the names it does; no row for the family is ok false: the caller must
// not guess a name.
func (kb *KB) AuxPackage(aux string, family DistroFamily, v Version) (Package, bool, error) {
	if !slices.Contains(AuxPackages, aux) {
		return Package{}, false, fmt.Errorf("the knowledge base has no package %q.%s", aux, spec.DidYouMean(aux, AuxPackages))
	}
	for _, p := range kb.auxPackages {
		if string(p.component) != aux || p.family != family {
			continue
		}
		name, err := expand(p.name, PackageQuery{Family: family, Version: v})
		if err != nil {
			return Package{}, false, nil
		}
		return Package{Name: name, NameFact: p.nameFact}, true, nil
	}
	return Package{}, false, nil
}

// PackageName is Package for callers that need only the name:
// kb.PackageName(spec.ComponentFabricManager, Debian, "", driver) →
// "nvidia-fabricmanager-550". flavour is "open" or "proprietary" for the
// driver and "cuda11", "cuda12" or "cuda13" for DCGM 4 packages. The Fact's
// status is StatusUnknown when no name is known.
func (kb *KB) PackageName(c spec.Component, family DistroFamily, flavour string, v Version) (string, Fact) {
	q := PackageQuery{Component: c, Family: family, Flavour: flavour, Version: v}
	// DCGM 4 package names carry the CUDA major: flavour "cuda12" picks it.
	if c == spec.ComponentDCGM && strings.HasPrefix(flavour, "cuda") {
		cv, err := ParseVersion(strings.TrimPrefix(flavour, "cuda"))
		if err != nil {
			return "", Fact{}
		}
		q.Flavour, q.CUDA = "", cv
	}
	p, ok := kb.Package(q)
	if !ok {
		return "", Fact{}
	}
	return p.Name, p.NameFact
}

// expand fills a kb_ template: {branch} and {driver} from a driver version,
// {version} from the component version, {cuda_major}/{cuda_minor} from the
// CUDA version (or, for the CUDA toolkit itself, from Version).
func expand(tmpl string, q PackageQuery) (string, error) {
	cuda := q.CUDA
	if q.Component == spec.ComponentCUDA {
		cuda = q.Version
	}
	var missing error
	repl := func(key string) string {
		switch key {
		case "branch":
			if q.Version.IsZero() {
				missing = fmt.Errorf("no driver version")
			}
			return strconv.Itoa(q.Version.Branch())
		case "driver", "version":
			if !q.Version.IsExact() {
				missing = fmt.Errorf("no exact version")
			}
			return q.Version.String()
		case "cuda_major":
			if cuda.IsZero() {
				missing = fmt.Errorf("no CUDA version")
			}
			return strconv.Itoa(cuda.Major())
		case "cuda_minor":
			if cuda.Len() < 2 {
				missing = fmt.Errorf("no CUDA minor")
			}
			return strconv.Itoa(cuda.Minor())
		}
		missing = fmt.Errorf("unknown placeholder {%s}", key)
		return ""
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			b.WriteString(tmpl)
			break
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unclosed placeholder in %q", tmpl)
		}
		b.WriteString(tmpl[:i])
		b.WriteString(repl(tmpl[i+1 : i+j]))
		tmpl = tmpl[i+j+1:]
	}
	return b.String(), missing
}
