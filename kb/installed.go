package kb

import (
	"strings"

	"github.com/gpuform/gpuform/spec"
)

// InstalledPackage is one row of installed-packages.tsv: an installed
// package whose version is the release of a component on a host, so that
// lock and plan read a host's release from its package database. Prefix
// rows match every package whose name starts with Name
// ("cuda-drivers" matches cuda-drivers-535); the others match Name only.
type InstalledPackage struct {
	// Component is the component whose release the package carries.
	Component spec.Component
	// Name is the package name, or its prefix when Prefix is set.
	Name string
	// Prefix says whether Name is a prefix.
	Prefix bool
	Fact
}

// Matches reports whether an installed package named name is this row's.
func (p InstalledPackage) Matches(name string) bool {
	if p.Prefix {
		return strings.HasPrefix(name, p.Name)
	}
	return name == p.Name
}

func (kb *KB) loadInstalled() error {
	// Every name must be one packages.tsv gives in its prose, so this
	// index cannot name a package the sourced table does not know.
	pkgs, err := readTable(kb.fsys, "data/packages.tsv", "package_name_pattern")
	if err != nil {
		return err
	}
	t, err := readTable(kb.fsys, "data/installed-packages.tsv", "component", "name", "match", "status", "source")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		comp, err := tableComponent(r, "component")
		if err != nil {
			return err
		}
		p := InstalledPackage{Component: comp, Name: r.get("name"), Fact: r.fact(st, "source", "")}
		switch r.get("match") {
		case "prefix":
			p.Prefix = true
		case "exact":
		default:
			return r.errorf("match %q: want prefix or exact", r.get("match"))
		}
		known := false
		for _, pr := range pkgs.rows {
			if strings.Contains(pr.get("package_name_pattern"), p.Name) {
				known = true
			}
		}
		if !known {
			return r.errorf("package %q is in no package_name_pattern of packages.tsv", p.Name)
		}
		kb.installed = append(kb.installed, p)
	}
	return nil
}

// InstalledPackages returns the rows of installed-packages.tsv for c, in
// table order.
func (kb *KB) InstalledPackages(c spec.Component) []InstalledPackage {
	var out []InstalledPackage
	for _, p := range kb.installed {
		if p.Component == c {
			out = append(out, p)
		}
	}
	return out
}
