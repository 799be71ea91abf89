package resource

import "github.com/gpuform/gpuform/provision/facts"

// pyxisPackageReads declares what pyxis_package reads back on a node:
// slurmd, which must restart to load a new plugin, and the plugstack
// drop-in.
func pyxisPackageReads() facts.Reads {
	return facts.Reads{ConfigFiles: []string{PyxisPlugstackFile}, Units: []string{"slurmd.service"}}
}

// buildPyxisPackage installs pyxis's Slurm plugin at the spec's release
// after enroot, which it depends on. slurmd loads SPANK plugins when it
// starts, so a new release is loaded by restarting slurmd where it runs,
// as the plugstack line's change does (pyxis's README restarts slurmd
// after installing); when the plugstack line changes too, its change
// restarts slurmd, once.
func buildPyxisPackage(in *buildInput) ([]Resource, []string, error) {
	c := in.n.Container
	if c == nil || c.Runtime.V != "enroot" || !c.PyxisVersion.Set {
		return nil, nil, nil
	}
	s := resolveSeries(pyxisSet(in.kb, in.family, c.PyxisVersion.V.Raw), in.f, func(v string) pkgSet { return pyxisSet(in.kb, in.family, v) })
	r := &pkgResource{base: base{name: PyxisPackage, deps: optional(c.EnrootVersion.Set, EnrootPackage)}, family: in.family, set: s,
		notOffered: "nvslurm-plugin-pyxis " + s.want + " is in no repository this node uses. NVIDIA publishes pyxis as source only, to be built against the Slurm release the cluster runs: build it (make deb or make rpm at https://github.com/NVIDIA/pyxis/tree/v" + s.want + ") and put the package in a repository this node uses, then apply again"}
	if in.f.Unit("slurmd.service").Enabled != "not-found" {
		r.restarts = []string{"slurmd.service"}
		// pyxis_plugstack, which runs after this, restarts slurmd when its
		// line changes: one restart per apply.
		line := "required " + pyxisPackagePlugin(in.family, in.f.Arch)
		r.restartIf = func(n *facts.Node) bool {
			cf := currentFile(n, PyxisPlugstackFile)
			own, _, _ := findPyxisLine(string(cf.Data))
			return cf.Exists && own == line
		}
	}
	return []Resource{r}, nil, nil
}

// pyxisPackagePlugin is where pyxis's package puts its plugin: libdir
// /usr/lib/<multiarch> in the deb (debian/rules), %{_libdir} in the rpm
// (pyxis.spec), at 107519944221822ea1dace4db8e7234b2eaa4cd5.
func pyxisPackagePlugin(family, arch string) string {
	if family == FamilyRHEL {
		return "/usr/lib64/slurm/spank_pyxis.so"
	}
	if arch == "" {
		arch = "x86_64"
	}
	return "/usr/lib/" + arch + "-linux-gnu/slurm/spank_pyxis.so"
}
