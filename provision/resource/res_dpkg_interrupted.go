package resource

import (
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
)

// DpkgRepair names the resource that finishes an interrupted dpkg run.
const DpkgRepair = "dpkg_interrupted"

// dpkgRepair finishes what an interrupted dpkg run left half done (a
// package unpacked or half-configured): apt refuses every install until
// `dpkg --configure -a` has run, so it is planned as its own change, before
// every package resource.
type dpkgRepair struct{ base }

// withDpkgRepair puts a dpkgRepair in front of the package resources when
// facts report packages dpkg left half done, and makes every package
// resource depend on it.
func withDpkgRepair(rs []Resource, f *facts.Node) []Resource {
	if f.Packages.Manager != facts.ManagerDpkg || len(f.InterruptedPackages()) == 0 {
		return rs
	}
	managed := false
	for _, r := range rs {
		if p, ok := r.(*pkgResource); ok {
			p.deps = append(p.deps, DpkgRepair)
			managed = true
		}
	}
	if !managed {
		// Repairing dpkg is a package change: only a spec that manages
		// packages asks for it.
		return rs
	}
	return append([]Resource{&dpkgRepair{base{name: DpkgRepair}}}, rs...)
}

func (r *dpkgRepair) Diff(n *facts.Node) (Change, error) {
	left := n.InterruptedPackages()
	after := Values{"dpkg": StringVal("configured")}
	if len(left) == 0 {
		c := r.change(after, after)
		c.Action = NoOp
		return c, nil
	}
	c := r.change(Values{"dpkg": StringVal("interrupted: " + strings.Join(left, ", "))}, after)
	// dpkg has no lock timeout of its own: the script waits for another
	// package manager as apt's DPkg::Lock::Timeout does.
	c.Steps = []Step{scriptStep("dpkg --configure -a (finish the interrupted dpkg run)", dpkgConfigureScript, strconv.Itoa(aptLockTimeout))}
	return c, nil
}
