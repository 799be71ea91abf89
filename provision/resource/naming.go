package resource

import (
	"strconv"
	"strings"
)

// Package names and version formats per distribution family, from the
// kb_ columns of lint/compat/data/packages.tsv (each row there carries its
// public source: NVIDIA's CUDA repository layout, the NCCL and DCGM
// packaging files, the container toolkit install guide). They live here
// until lint/compat exposes that table through an API; keep both in step.

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

// driverSet is the driver package for a family and kernel module flavour.
// Debian/Ubuntu: NVIDIA's CUDA repository ships the proprietary driver as
// cuda-drivers-<branch> and the open modules as nvidia-open; Canonical's
// archive ships nvidia-driver-<branch>[-server][-open], accepted as the same
// driver when it is already installed at the wanted release.
func driverSet(family, flavour, version string) pkgSet {
	branch := branchOf(version)
	s := pkgSet{want: version, hold: true, pins: map[string]string{}, related: []string{"cuda-drivers-", "nvidia-driver-", "nvidia-open"}}
	switch {
	case flavour == "open":
		s.names = []string{"nvidia-open"}
		s.accept = []string{"nvidia-driver-" + branch + "-open", "nvidia-driver-" + branch + "-server-open"}
	default:
		s.names = []string{"cuda-drivers-" + branch}
		s.accept = []string{"nvidia-driver-" + branch, "nvidia-driver-" + branch + "-server"}
	}
	if exactRelease(version) {
		if family == FamilyDebian {
			s.pins[s.names[0]] = aptPin(version)
		} else {
			s.pins[s.names[0]] = version
		}
	}
	return s
}

// fabricManagerSet is nvidia-fabricmanager-<branch> at the driver's exact
// version: Fabric Manager refuses to start against a different driver.
func fabricManagerSet(family, driver string) pkgSet {
	// Fabric Manager has its own package revision, so only the driver's
	// upstream release carries over.
	driver, _, _ = strings.Cut(driver, "-")
	s := pkgSet{names: []string{"nvidia-fabricmanager-" + branchOf(driver)}, want: driver, hold: true, pins: map[string]string{}, related: []string{"nvidia-fabricmanager-"}}
	if exactRelease(driver) {
		if family == FamilyDebian {
			// packages.tsv: fabric-manager version format {driver}-1.
			s.pins[s.names[0]] = driver + "-1"
		} else {
			s.pins[s.names[0]] = driver
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
	name := "cuda-toolkit-" + p[0] + "-" + minor
	s := pkgSet{names: []string{name}, want: version, pins: map[string]string{}, related: []string{"cuda-toolkit-"}}
	if len(p) > 2 {
		if family == FamilyDebian {
			s.pins[name] = aptPin(version)
		} else {
			s.pins[name] = version
		}
	}
	return s
}

// ncclSet is libnccl2 + libnccl-dev (apt) or libnccl + libnccl-devel (dnf),
// version "<nccl>-1+cuda<major>.<minor>" when the CUDA release is known.
func ncclSet(family, version, cuda string) pkgSet {
	names := []string{"libnccl2", "libnccl-dev"}
	if family == FamilyRHEL {
		names = []string{"libnccl", "libnccl-devel"}
	}
	s := pkgSet{names: names, want: version, hold: true, pins: map[string]string{}}
	pin := ""
	switch {
	case strings.Contains(version, "-"):
		pin = version
	case cuda != "" && len(versionParts(cuda)) > 1:
		cp := versionParts(cuda)
		pin = version + "-1+cuda" + cp[0] + "." + cp[1]
	case family == FamilyDebian:
		pin = aptPin(version)
	}
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
	if cuda != "" {
		s.names = []string{"datacenter-gpu-manager-4-cuda" + versionParts(cuda)[0], "datacenter-gpu-manager-4-core"}
	}
	if exactRelease(version) {
		pin := "1:" + version + "-1"
		if strings.Contains(version, "-") {
			pin = "1:" + version
		}
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
func containerToolkitSet(version string) pkgSet {
	names := []string{"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"}
	s := pkgSet{names: names, want: version, pins: map[string]string{}}
	pin := version + "-1"
	if strings.Contains(version, "-") {
		pin = version
	}
	for _, n := range names {
		s.pins[n] = pin
	}
	return s
}
