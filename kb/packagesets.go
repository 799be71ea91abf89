package kb

import (
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/spec"
)

// PackageRole says how a package relates to the main package of a
// component (the one Package names).
type PackageRole string

// Roles of package-sets.tsv.
const (
	// RoleCompanion packages are installed, pinned and held at the main
	// package's version, in the same transaction.
	RoleCompanion PackageRole = "companion"
	// RoleAccept packages, installed at the wanted release, count as the
	// main package (Canonical's build of the same driver).
	RoleAccept PackageRole = "accept"
	// RoleConflict names are patterns (path.Match) of installed packages
	// that leave in the same transaction: another branch's or flavour's.
	RoleConflict PackageRole = "conflict"
	// RoleKeep packages match a conflict pattern but belong to the wanted
	// release and stay.
	RoleKeep PackageRole = "keep"
	// RoleRelated names are prefixes of packages that play the same role
	// in another release; plan shows them as the value before a change.
	RoleRelated PackageRole = "related"
)

// anyBranchGlob is what {any_branch} expands to: any three-digit driver
// branch (R418 to R590 and on), as a path.Match pattern.
const anyBranchGlob = "[0-9][0-9][0-9]"

// packageSetRow is one row of package-sets.tsv.
type packageSetRow struct {
	component spec.Component
	family    string // "*" matches every family
	flavour   string // "*" matches every flavour
	role      PackageRole
	name      string
	fact      Fact
}

func (kb *KB) loadPackageSets() error {
	// Confirmed names must be ones packages.tsv gives in its prose (a
	// placeholder written <branch> there), so this table cannot confirm a
	// package the sourced table does not know.
	pkgs, err := readTable(kb.fsys, "data/packages.tsv", "package_name_pattern")
	if err != nil {
		return err
	}
	t, err := readTable(kb.fsys, "data/package-sets.tsv", "kb_component", "kb_family", "kb_flavour", "role", "name", "status", "source", "note")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		comp, err := tableComponent(r, "kb_component")
		if err != nil {
			return err
		}
		p := packageSetRow{component: comp, family: r.get("kb_family"), flavour: r.get("kb_flavour"), role: PackageRole(r.get("role")), name: r.get("name"), fact: r.fact(st, "source", "note")}
		switch p.role {
		case RoleCompanion, RoleAccept, RoleConflict, RoleKeep, RoleRelated:
		default:
			return r.errorf("role %q: want companion, accept, conflict, keep or related", p.role)
		}
		if p.family != "*" {
			if _, ok := ParseDistroFamily(p.family); !ok {
				return r.errorf("kb_family %q: want debian, rhel or *", p.family)
			}
		}
		if st.CanBeError() && r.get("source") == "" {
			return r.errorf("a %s row needs a source", st)
		}
		if st.CanBeError() {
			prose := strings.NewReplacer("{branch}", "<branch>", "{any_branch}", "<branch>").Replace(p.name)
			known := false
			for _, pr := range pkgs.rows {
				if strings.Contains(pr.get("package_name_pattern"), prose) {
					known = true
				}
			}
			if !known {
				return r.errorf("package %q is in no package_name_pattern of packages.tsv", prose)
			}
		}
		kb.packageSets = append(kb.packageSets, p)
	}
	return nil
}

// PackageSet returns the names of a role for the package set of q (its
// Component, Family and Flavour; Version fills {branch}), in table order.
// Conflict names are path.Match patterns; related names are prefixes. A row
// whose placeholder q cannot fill (no driver version for {branch}) is left
// out.
func (kb *KB) PackageSet(q PackageQuery, role PackageRole) []string {
	flavour := strings.ToLower(q.Flavour)
	if q.Component == spec.ComponentDCGM && flavour == "" {
		flavour = "dcgm" + strconv.Itoa(q.Version.Major())
	}
	var out []string
	for _, p := range kb.packageSets {
		if p.component != q.Component || p.role != role ||
			(p.family != "*" && DistroFamily(p.family) != q.Family) ||
			(p.flavour != "*" && p.flavour != flavour) {
			continue
		}
		name, err := expand(strings.ReplaceAll(p.name, "{any_branch}", anyBranchGlob), q)
		if err != nil {
			continue
		}
		out = append(out, name)
	}
	return out
}
