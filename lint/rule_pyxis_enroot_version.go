package lint

import (
	"fmt"

	"github.com/gpuform/gpuform/spec"
)

// pyxisEnrootVersionRule declares pyxis_enroot_version.
func pyxisEnrootVersionRule() Rule {
	return Rule{
		Name:     "pyxis_enroot_version",
		Severity: Warning,
		Summary:  "pyxis_version is set, but enroot, which pyxis's package depends on (>= 3.1.0), is not pinned at a release that satisfies it.",
		Check:    checkPyxisEnrootVersion,
	}
}

// pyxisControl is pyxis's Debian packaging: nvslurm-plugin-pyxis depends on
// enroot (>= 3.1.0) | enroot-hardened (>= 3.1.0); its rpm spec says the same.
const pyxisControl = "https://github.com/NVIDIA/pyxis/blob/107519944221822ea1dace4db8e7234b2eaa4cd5/debian/control"

// pyxisEnrootFloor is the oldest enroot pyxis's package accepts.
var pyxisEnrootFloor = spec.Version{Raw: "3.1.0", Parts: []int{3, 1, 0}}

func checkPyxisEnrootVersion(ctx *Context) {
	for _, n := range ctx.Nodes() {
		c := n.Container
		if c == nil || c.Runtime.V != "enroot" || !c.PyxisVersion.Set {
			continue
		}
		if !c.EnrootVersion.Set {
			ctx.Report(c.PyxisVersion.Range,
				fmt.Sprintf("%s: pyxis_version without enroot_version: enroot comes unpinned", nodeRef(n)),
				fmt.Sprintf("nvslurm-plugin-pyxis depends on enroot (>= 3.1.0) (%s): installing it makes the package manager install whichever enroot the node's repositories offer, neither pinned nor held, so nodes meant to be identical can run different enroot releases. Set enroot_version beside pyxis_version.", pyxisControl))
			continue
		}
		v := c.EnrootVersion.V
		if v.Compare(pyxisEnrootFloor) < 0 && !pyxisEnrootFloor.Within(v) {
			ctx.Report(c.EnrootVersion.Range,
				fmt.Sprintf("%s: enroot %s is older than the 3.1.0 pyxis needs", nodeRef(n), v.Raw),
				fmt.Sprintf("nvslurm-plugin-pyxis depends on enroot (>= 3.1.0) (%s): the package manager refuses to install it beside enroot %s. Set enroot_version to 3.1.0 or later.", pyxisControl, v.Raw))
		}
	}
}
