package resource

import (
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
)

// Package names and version formats come from the knowledge base
// (kb/data/packages.tsv, each row with its public source: NVIDIA's
// CUDA repository layout, the NCCL and DCGM packaging files, the container
// toolkit install guide); so do the packages that travel with each one
// (kb/data/package-sets.tsv: companions pinned with it, Canonical's
// builds accepted as it, other branches' packages that conflict with it).
// What is filled in here is only the main package's name where the
// knowledge base has no row for a family (the CUDA toolkit on RHEL), in the
// pattern NVIDIA's repositories use for the other family.

// kbQuery is the knowledge base's question about a component's packages.
// version and cuda may carry a package revision; only the release is used.
// ok is false when version does not parse.
func kbQuery(c spec.Component, family, flavour, version, cuda string) (kb.PackageQuery, bool) {
	fam := kb.Debian
	if family == FamilyRHEL {
		fam = kb.RHEL
	}
	release, _, _ := strings.Cut(version, "-")
	parse := kb.ParseVersion
	if c == spec.ComponentDriver || c == spec.ComponentFabricManager {
		parse = kb.ParseDriverVersion
	}
	v, err := parse(release)
	if err != nil {
		return kb.PackageQuery{}, false
	}
	q := kb.PackageQuery{Component: c, Family: fam, Flavour: flavour, Version: v}
	if cuda != "" {
		cr, _, _ := strings.Cut(cuda, "-")
		if cv, err := kb.ParseVersion(cr); err == nil {
			q.CUDA = cv
		}
	}
	return q, true
}

// kbPackage asks the knowledge base for a component's package name and, when
// the table has a confirmed version format, the full version string.
func kbPackage(k *kb.KB, c spec.Component, family, flavour, version, cuda string) (name, versionString string, ok bool) {
	q, ok := kbQuery(c, family, flavour, version, cuda)
	if !ok {
		return "", "", false
	}
	p, ok := k.Package(q)
	if !ok {
		return "", "", false
	}
	return p.Name, p.VersionString, true
}

// kbSet returns the names of a role in a component's package set.
func kbSet(k *kb.KB, c spec.Component, family, flavour, version, cuda string, role kb.PackageRole) []string {
	q, ok := kbQuery(c, family, flavour, version, cuda)
	if !ok {
		return nil
	}
	return k.PackageSet(q, role)
}

// pinFor returns the version to give the package manager: the spec's
// version as written when it carries a package revision, else the
// knowledge base's version string, else fallback.
func pinFor(version, kbVersion, fallback string) string {
	switch {
	case strings.Contains(version, "-"):
		return version
	case kbVersion != "":
		return kbVersion
	}
	return fallback
}

// versionParts splits "12.4.1" into its numeric strings.
func versionParts(v string) []string {
	main, _, _ := strings.Cut(v, "-")
	return strings.Split(main, ".")
}

// branchOf returns the driver branch of a driver version ("550.127.08" → "550").
func branchOf(v string) string { return versionParts(v)[0] }

// exactRelease reports whether v names one release rather than a branch.
func exactRelease(v string) bool { return len(versionParts(v)) > 1 }

// aptPin returns the apt version for an upstream release whose package
// revision is not known: a prefix match on "<release>-", which apt's
// version matching supports with a trailing '*'. A version written with its
// revision is used exactly.
func aptPin(v string) string {
	if strings.Contains(v, "-") {
		return v
	}
	return v + "-*"
}

// driverSet is the driver package for a family and kernel module flavour:
// NVIDIA's CUDA repository ships the proprietary driver as
// cuda-drivers-<branch> and the open modules as nvidia-open; the packages
// accepted as the same driver (Canonical's builds) and those that conflict
// with it are the knowledge base's package set.
func driverSet(k *kb.KB, family, flavour, version string) pkgSet {
	branch := branchOf(version)
	if flavour != "open" {
		flavour = "proprietary"
	}
	set := func(role kb.PackageRole) []string {
		return kbSet(k, spec.ComponentDriver, family, flavour, version, "", role)
	}
	s := pkgSet{want: version, hold: true, pins: map[string]string{}, related: set(kb.RoleRelated), accept: set(kb.RoleAccept)}
	name, kbVer, ok := kbPackage(k, spec.ComponentDriver, family, flavour, version, "")
	if !ok {
		// The table has both flavours for both families: a version that
		// does not parse is the only way here, and plan reports it.
		name = "cuda-drivers-" + branch
		if flavour == "open" {
			name = "nvidia-open"
		}
	}
	s.names = []string{name}
	// Another branch's or flavour's driver conflicts with this one through
	// its kernel module package; both leave in the same transaction.
	s.removes, s.keep = set(kb.RoleConflict), set(kb.RoleKeep)
	if exactRelease(version) {
		if family == FamilyDebian {
			s.pins[name] = pinFor(version, kbVer, aptPin(version))
		} else {
			s.pins[name] = pinFor(version, kbVer, version)
		}
	} else if family == FamilyDebian {
		// A branch nothing resolved (no release of it installed or in
		// apt's lists at plan time): never let apt pick another branch.
		s.pins[name] = branch + ".*"
	}
	if family == FamilyDebian {
		if pin := kbPin(k, family, flavour, version); pin != "" {
			// NVIDIA's documented way to keep apt on a branch: its
			// branch pinning package, installed in the same transaction
			// when the repository carries it (another branch's pinning
			// package is among the conflicts).
			s.pinning = pin
			s.keep = append(s.keep, pin)
		}
	}
	return s
}

// kbPin is the knowledge base's branch pin for a driver flavour
// ("nvidia-driver-pinning-580" for the open modules on Debian), or "".
func kbPin(k *kb.KB, family, flavour, version string) string {
	fam := kb.Debian
	if family == FamilyRHEL {
		fam = kb.RHEL
	}
	release, _, _ := strings.Cut(version, "-")
	v, err := kb.ParseDriverVersion(release)
	if err != nil {
		return ""
	}
	p, ok := k.Package(kb.PackageQuery{Component: spec.ComponentDriver, Family: fam, Flavour: flavour, Version: v})
	if !ok {
		return ""
	}
	return p.Pin
}

// fabricManagerSet is nvidia-fabricmanager-<branch> at the driver's exact
// version: Fabric Manager refuses to start against a different driver.
func fabricManagerSet(k *kb.KB, family, driver string) pkgSet {
	// Fabric Manager has its own package revision, so only the driver's
	// upstream release carries over.
	driver, _, _ = strings.Cut(driver, "-")
	name, kbVer, ok := kbPackage(k, spec.ComponentFabricManager, family, "", driver, "")
	if !ok {
		name = "nvidia-fabricmanager-" + branchOf(driver)
	}
	set := func(role kb.PackageRole) []string {
		return kbSet(k, spec.ComponentFabricManager, family, "", driver, "", role)
	}
	// Every branch's package has Provides/Conflicts/Replaces:
	// nvidia-fabricmanager; the other branch's leaves in the same
	// transaction, with the meta package that depends on it.
	s := pkgSet{names: []string{name}, want: driver, hold: true, pins: map[string]string{}, related: set(kb.RoleRelated), removes: set(kb.RoleConflict), keep: set(kb.RoleKeep)}
	if exactRelease(driver) {
		if family == FamilyDebian {
			s.pins[name] = pinFor(driver, kbVer, aptPin(driver))
		} else {
			s.pins[name] = pinFor(driver, kbVer, driver)
		}
	}
	return s
}

// cudaSet is cuda-toolkit-<major>-<minor>.
func cudaSet(k *kb.KB, family, version string) pkgSet {
	p := versionParts(version)
	minor := "0"
	if len(p) > 1 {
		minor = p[1]
	}
	name, kbVer, ok := kbPackage(k, spec.ComponentCUDA, family, "", version, "")
	if !ok {
		name = "cuda-toolkit-" + p[0] + "-" + minor
	}
	// Held like every other package gpuform pins: the user guide promises
	// exact, held versions, and an unattended upgrade must not move them.
	s := pkgSet{names: []string{name}, want: version, hold: true, pins: map[string]string{}, related: kbSet(k, spec.ComponentCUDA, family, "", version, "", kb.RoleRelated)}
	if len(p) > 2 {
		if family == FamilyDebian {
			s.pins[name] = pinFor(version, kbVer, aptPin(version))
		} else {
			s.pins[name] = pinFor(version, kbVer, version)
		}
	}
	return s
}

// ncclSet is libnccl2 (apt) or libnccl (dnf) with its companions (the
// development package, for building nccl-tests and extensions), version
// "<nccl>-1+cuda<major>.<minor>" when the CUDA release is known.
func ncclSet(k *kb.KB, family, version, cuda string) pkgSet {
	name, kbVer, ok := kbPackage(k, spec.ComponentNCCL, family, "", version, cuda)
	if !ok {
		// A version the knowledge base cannot parse: NCCL's runtime
		// package name carries no version, so the table's name holds.
		name = "libnccl2"
		if family == FamilyRHEL {
			name = "libnccl"
		}
	}
	names := append([]string{name}, kbSet(k, spec.ComponentNCCL, family, "", version, cuda, kb.RoleCompanion)...)
	s := pkgSet{names: names, want: version, hold: true, pins: map[string]string{}}
	fallback := ""
	if family == FamilyDebian {
		fallback = aptPin(version)
	}
	pin := pinFor(version, kbVer, fallback)
	for _, n := range names {
		s.pins[n] = pin
	}
	if p := versionParts(cuda); cuda != "" && len(p) > 1 && !strings.Contains(version, "-") {
		// NVIDIA builds each NCCL release for several CUDA releases
		// (packages.tsv: <nccl>-<rev>+cuda<major>.<minor>).
		s.build = "+cuda" + p[0] + "." + p[1]
	}
	return s
}

// dcgmSet is DCGM 4's datacenter-gpu-manager-4-cuda<major> (or -core when
// no CUDA is declared), version "1:<dcgm>-1", or DCGM 3's
// datacenter-gpu-manager.
func dcgmSet(k *kb.KB, family, version, cuda string) pkgSet {
	major, _ := strconv.Atoi(versionParts(version)[0])
	s := pkgSet{want: version, pins: map[string]string{}}
	if major < 4 {
		name, _, ok := kbPackage(k, spec.ComponentDCGM, family, "", version, "")
		if !ok {
			// No RHEL row for DCGM 3: its package had one name on both.
			name = "datacenter-gpu-manager"
		}
		s.names = []string{name}
		if family == FamilyDebian {
			s.pins[s.names[0]] = "1:" + version + "*"
		}
		return s
	}
	// The CUDA-specific package depends on its companion -core; both are
	// pinned so that apt cannot pair the pinned one with a newer core.
	core := kbSet(k, spec.ComponentDCGM, family, "", version, cuda, kb.RoleCompanion)
	if len(core) == 0 {
		// Only a version the knowledge base cannot parse gets here.
		core = []string{"datacenter-gpu-manager-4-core"}
	}
	s.names = core
	pin := pinFor(version, "", "1:"+version+"-1")
	if strings.Contains(version, "-") {
		pin = "1:" + version
	}
	if cuda != "" {
		name, kbVer, ok := kbPackage(k, spec.ComponentDCGM, family, "", version, cuda)
		if !ok {
			name = "datacenter-gpu-manager-4-cuda" + versionParts(cuda)[0]
		}
		s.names = append([]string{name}, core...)
		pin = pinFor(version, kbVer, pin)
	}
	if exactRelease(version) {
		for _, n := range s.names {
			s.pins[n] = pin
		}
	}
	return s
}

// containerToolkitSet is the NVIDIA container toolkit with its companions,
// the packages it needs at exactly its own version, pinned together as
// NVIDIA's install guide does (apt does not pull matching versions of the
// others when the toolkit is pinned).
func containerToolkitSet(k *kb.KB, family, version string) pkgSet {
	name, kbVer, ok := kbPackage(k, spec.ComponentContainerToolkit, family, "", version, "")
	if !ok {
		name = "nvidia-container-toolkit"
	}
	names := append([]string{name}, kbSet(k, spec.ComponentContainerToolkit, family, "", version, "", kb.RoleCompanion)...)
	s := pkgSet{names: names, want: version, hold: true, pins: map[string]string{}}
	pin := pinFor(version, kbVer, version+"-1")
	for _, n := range names {
		s.pins[n] = pin
	}
	return s
}

// runtimeSet is the package of a container runtime (enroot, pyxis,
// Apptainer) with the companions of flavour, pinned and held at one
// release. A series ("4.1") is pinned as a glob, so the newest release of
// it in the repositories is installed.
func runtimeSet(k *kb.KB, c spec.Component, family, flavour, version, fallback string) pkgSet {
	name, kbVer, ok := kbPackage(k, c, family, "", version, "")
	if !ok {
		name = fallback
	}
	names := append([]string{name}, kbSet(k, c, family, flavour, version, "", kb.RoleCompanion)...)
	s := pkgSet{names: names, want: version, hold: true, pins: map[string]string{}, accept: kbSet(k, c, family, flavour, version, "", kb.RoleAccept)}
	pin := version + ".*"
	switch {
	case len(versionParts(version)) > 2 && family == FamilyDebian:
		pin = pinFor(version, kbVer, aptPin(version))
	case len(versionParts(version)) > 2:
		pin = pinFor(version, kbVer, version)
	}
	for _, n := range names {
		s.pins[n] = pin
	}
	return s
}

// enrootSet is enroot, with enroot+caps when caps is true; caps false
// (written so in the spec) removes enroot+caps, whose capabilities the
// spec then says users must not have. uncaps is false when the spec is
// silent, and an installed enroot+caps is left alone.
func enrootSet(k *kb.KB, family, version string, caps, uncaps bool) pkgSet {
	flavour := ""
	if caps {
		flavour = "caps"
	}
	s := runtimeSet(k, spec.ComponentEnroot, family, flavour, version, "enroot")
	if uncaps {
		s.removes = kbSet(k, spec.ComponentEnroot, family, "caps", version, "", kb.RoleCompanion)
	}
	return s
}

// pyxisSet is pyxis's package, nvslurm-plugin-pyxis.
func pyxisSet(k *kb.KB, family, version string) pkgSet {
	return runtimeSet(k, spec.ComponentPyxis, family, "", version, "nvslurm-plugin-pyxis")
}

// apptainerSet is Apptainer's package. apptainer-suid is not installed:
// running setuid is a site's security decision.
func apptainerSet(k *kb.KB, family, version string) pkgSet {
	return runtimeSet(k, spec.ComponentApptainer, family, "", version, "apptainer")
}
