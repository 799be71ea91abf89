package resource

import (
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/lint/compat"
	"github.com/gpuform/gpuform/spec"
)

// Package names and version formats come from lint/compat's knowledge base
// (lint/compat/data/packages.tsv, each row with its public source: NVIDIA's
// CUDA repository layout, the NCCL and DCGM packaging files, the container
// toolkit install guide). What the table does not hold (the -dev package of
// NCCL, the toolkit's sibling packages, Canonical's names accepted as
// already installed) is filled in here, each with its reason.

// kbPackage asks the knowledge base for a component's package name and, when
// the table has a confirmed version format, the full version string.
// version and cuda may carry a package revision; only the release is used.
func kbPackage(c spec.Component, family, flavour, version, cuda string) (name, versionString string, ok bool) {
	fam := compat.Debian
	if family == FamilyRHEL {
		fam = compat.RHEL
	}
	release, _, _ := strings.Cut(version, "-")
	parse := compat.ParseVersion
	if c == spec.ComponentDriver || c == spec.ComponentFabricManager {
		parse = compat.ParseDriverVersion
	}
	v, err := parse(release)
	if err != nil {
		return "", "", false
	}
	q := compat.PackageQuery{Component: c, Family: fam, Flavour: flavour, Version: v}
	if cuda != "" {
		cr, _, _ := strings.Cut(cuda, "-")
		if cv, err := compat.ParseVersion(cr); err == nil {
			q.CUDA = cv
		}
	}
	p, ok := compat.Default().Package(q)
	if !ok {
		return "", "", false
	}
	return p.Name, p.VersionString, true
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

// branchGlob matches a driver branch number in a package name (R418 to R590
// and on: three digits).
const branchGlob = "[0-9][0-9][0-9]"

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

// driverSet is the driver package for a family and kernel module flavour.
// Debian/Ubuntu: NVIDIA's CUDA repository ships the proprietary driver as
// cuda-drivers-<branch> and the open modules as nvidia-open; Canonical's
// archive ships nvidia-driver-<branch>[-server][-open], accepted as the same
// driver when it is already installed at the wanted release.
func driverSet(family, flavour, version string) pkgSet {
	branch := branchOf(version)
	s := pkgSet{want: version, hold: true, pins: map[string]string{}, related: []string{"cuda-drivers-", "nvidia-driver-", "nvidia-open"}}
	if flavour != "open" {
		flavour = "proprietary"
	}
	name, kbVer, ok := kbPackage(spec.ComponentDriver, family, flavour, version, "")
	switch {
	case flavour == "open":
		if !ok {
			name = "nvidia-open"
		}
		s.accept = []string{"nvidia-driver-" + branch + "-open", "nvidia-driver-" + branch + "-server-open"}
	default:
		if !ok {
			name = "cuda-drivers-" + branch
		}
		s.accept = []string{"nvidia-driver-" + branch, "nvidia-driver-" + branch + "-server"}
		if family == FamilyRHEL {
			// NVIDIA's RHEL repository installs the driver as the
			// unversioned nvidia-driver package from a branch module stream.
			s.accept = append(s.accept, "nvidia-driver")
		}
	}
	s.names = []string{name}
	{
		// Another branch's or flavour's driver conflicts with this one
		// through its kernel module package (NVIDIA's apt packages:
		// cuda-drivers-<branch> depends on nvidia-kernel-source-<branch>,
		// nvidia-open on nvidia-kernel-open-<branch>, each with "=").
		s.removes = []string{"cuda-drivers-" + branchGlob, "nvidia-open", "nvidia-kernel-source-" + branchGlob, "nvidia-kernel-open-" + branchGlob}
		if flavour == "open" {
			s.keep = []string{"nvidia-kernel-open-" + branch}
		} else {
			s.keep = []string{"nvidia-kernel-source-" + branch}
		}
	}
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
		if pin := kbPin(family, flavour, version); strings.HasPrefix(pin, "nvidia-driver-pinning-") {
			// NVIDIA's documented way to keep apt on a branch: its
			// branch pinning package, installed in the same transaction
			// when the repository carries it.
			s.pinning = pin
			s.removes = append(s.removes, "nvidia-driver-pinning-"+branchGlob)
			s.keep = append(s.keep, pin)
		}
	}
	return s
}

// kbPin is the knowledge base's branch pin for a driver flavour
// ("nvidia-driver-pinning-580" for the open modules on Debian), or "".
func kbPin(family, flavour, version string) string {
	fam := compat.Debian
	if family == FamilyRHEL {
		fam = compat.RHEL
	}
	release, _, _ := strings.Cut(version, "-")
	v, err := compat.ParseDriverVersion(release)
	if err != nil {
		return ""
	}
	p, ok := compat.Default().Package(compat.PackageQuery{Component: spec.ComponentDriver, Family: fam, Flavour: flavour, Version: v})
	if !ok {
		return ""
	}
	return p.Pin
}

// fabricManagerSet is nvidia-fabricmanager-<branch> at the driver's exact
// version: Fabric Manager refuses to start against a different driver.
func fabricManagerSet(family, driver string) pkgSet {
	// Fabric Manager has its own package revision, so only the driver's
	// upstream release carries over.
	driver, _, _ = strings.Cut(driver, "-")
	name, kbVer, ok := kbPackage(spec.ComponentFabricManager, family, "", driver, "")
	if !ok {
		name = "nvidia-fabricmanager-" + branchOf(driver)
	}
	s := pkgSet{names: []string{name}, want: driver, hold: true, pins: map[string]string{}, related: []string{"nvidia-fabricmanager-"}}
	{
		// Every branch's package has Provides/Conflicts/Replaces:
		// nvidia-fabricmanager; the other branch's leaves in the same
		// transaction, with the meta package that depends on it.
		s.removes = []string{"nvidia-fabricmanager-" + branchGlob, "cuda-drivers-fabricmanager-" + branchGlob}
		s.keep = []string{"cuda-drivers-fabricmanager-" + branchOf(driver)}
	}
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
func cudaSet(family, version string) pkgSet {
	p := versionParts(version)
	minor := "0"
	if len(p) > 1 {
		minor = p[1]
	}
	name, kbVer, ok := kbPackage(spec.ComponentCUDA, family, "", version, "")
	if !ok {
		name = "cuda-toolkit-" + p[0] + "-" + minor
	}
	// Held like every other package gpuform pins: the README promises
	// exact, held versions, and an unattended upgrade must not move them.
	s := pkgSet{names: []string{name}, want: version, hold: true, pins: map[string]string{}, related: []string{"cuda-toolkit-"}}
	if len(p) > 2 {
		if family == FamilyDebian {
			s.pins[name] = pinFor(version, kbVer, aptPin(version))
		} else {
			s.pins[name] = pinFor(version, kbVer, version)
		}
	}
	return s
}

// ncclSet is libnccl2 + libnccl-dev (apt) or libnccl + libnccl-devel (dnf),
// version "<nccl>-1+cuda<major>.<minor>" when the CUDA release is known.
func ncclSet(family, version, cuda string) pkgSet {
	// The development package (headers, for building nccl-tests and
	// extensions) is not in the knowledge base; NCCL's packaging names it
	// libnccl-dev (deb) and libnccl-devel (rpm), same version as the runtime.
	names := []string{"libnccl2", "libnccl-dev"}
	if family == FamilyRHEL {
		names = []string{"libnccl", "libnccl-devel"}
	}
	name, kbVer, ok := kbPackage(spec.ComponentNCCL, family, "", version, cuda)
	if ok {
		names[0] = name
	}
	s := pkgSet{names: names, want: version, hold: true, pins: map[string]string{}}
	fallback := ""
	if family == FamilyDebian {
		fallback = aptPin(version)
	}
	pin := pinFor(version, kbVer, fallback)
	for _, n := range names {
		s.pins[n] = pin
	}
	return s
}

// dcgmSet is DCGM 4's datacenter-gpu-manager-4-cuda<major> (or -core when
// no CUDA is declared), version "1:<dcgm>-1", or DCGM 3's
// datacenter-gpu-manager.
func dcgmSet(family, version, cuda string) pkgSet {
	major, _ := strconv.Atoi(versionParts(version)[0])
	s := pkgSet{want: version, pins: map[string]string{}}
	if major < 4 {
		s.names = []string{"datacenter-gpu-manager"}
		if family == FamilyDebian {
			s.pins[s.names[0]] = "1:" + version + "*"
		}
		return s
	}
	// The CUDA-specific package depends on -core; both are pinned so that
	// apt cannot pair the pinned one with a newer core.
	s.names = []string{"datacenter-gpu-manager-4-core"}
	pin := pinFor(version, "", "1:"+version+"-1")
	if strings.Contains(version, "-") {
		pin = "1:" + version
	}
	if cuda != "" {
		name, kbVer, ok := kbPackage(spec.ComponentDCGM, family, "", version, cuda)
		if !ok {
			name = "datacenter-gpu-manager-4-cuda" + versionParts(cuda)[0]
		}
		s.names = []string{name, "datacenter-gpu-manager-4-core"}
		pin = pinFor(version, kbVer, pin)
	}
	if exactRelease(version) {
		for _, n := range s.names {
			s.pins[n] = pin
		}
	}
	return s
}

// containerToolkitSet is the NVIDIA container toolkit with the three
// packages it needs at exactly its own version, pinned together as NVIDIA's
// install guide does (apt does not pull matching versions of the others
// when the toolkit is pinned).
func containerToolkitSet(family, version string) pkgSet {
	names := []string{"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"}
	name, kbVer, ok := kbPackage(spec.ComponentContainerToolkit, family, "", version, "")
	if ok {
		names[0] = name
	}
	s := pkgSet{names: names, want: version, hold: true, pins: map[string]string{}}
	pin := pinFor(version, kbVer, version+"-1")
	for _, n := range names {
		s.pins[n] = pin
	}
	return s
}
