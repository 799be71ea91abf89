package resource

import (
	"fmt"
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
	c.Steps = []Step{commandStep("dpkg --configure -a (finish the interrupted dpkg run)",
		"export DEBIAN_FRONTEND=noninteractive",
		// dpkg has no lock timeout of its own: wait for another package
		// manager as apt's DPkg::Lock::Timeout does.
		"i=0",
		"while ! out=$(dpkg --force-confold --configure -a 2>&1); do",
		`	case $out in *"lock"*) ;; *) break ;; esac`,
		"	i=$((i + 1))",
		"	[ $i -lt "+fmt.Sprint(aptLockTimeout)+" ] || break",
		"	sleep 1",
		"done",
		`if [ -n "$(dpkg --audit 2>/dev/null)" ]; then`,
		`	printf '%s\n' "$out" >&2`,
		`	echo "dpkg was interrupted and 'dpkg --configure -a' did not finish it; fix the package named above, then run 'dpkg --configure -a' on the node" >&2`,
		"	exit 1",
		"fi")}
	return c, nil
}
