package resource

import (
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
)

// enrootPackageReads declares what enroot_package reads back on a node:
// nothing beyond the node facts every resource shares (packages, devices).
func enrootPackageReads() facts.Reads { return facts.Reads{} }

// buildEnrootPackage installs enroot (and enroot+caps with enroot_caps) at
// the spec's release and holds it.
func buildEnrootPackage(in *buildInput) ([]Resource, []string, error) {
	c := in.n.Container
	if c == nil || c.Runtime.V != "enroot" || !c.EnrootVersion.Set {
		return nil, nil, nil
	}
	caps, uncaps := c.EnrootCaps.V, c.EnrootCaps.Set && !c.EnrootCaps.V
	s := resolveSeries(enrootSet(in.kb, in.family, c.EnrootVersion.V.Raw, caps, uncaps), in.f, func(v string) pkgSet { return enrootSet(in.kb, in.family, v, caps, uncaps) })
	return []Resource{&pkgResource{base: base{name: EnrootPackage}, family: in.family, set: s,
		notOffered: enrootNotOffered(in.family, s, in.f.Arch)}}, nil, nil
}

// resolveSeries turns a series ("4.1") into the release of it installed, so
// that a converged node reads as converged; with none installed the series
// stays, pinned as a glob, and the newest release of it is installed.
func resolveSeries(s pkgSet, f *facts.Node, remake func(string) pkgSet) pkgSet {
	if len(versionParts(s.want)) > 2 {
		return s
	}
	if _, p, ok := s.installedAs(f); ok && strings.HasPrefix(upstream(p.Version)+".", s.want+".") {
		return remake(upstream(p.Version))
	}
	return s
}

// enrootNotOffered says where enroot comes from when the node's
// repositories lack the release: NVIDIA publishes it as release files on
// GitHub, not in a repository (NVIDIA/enroot doc/installation.md at
// 8ea147d337da60cb1c557140f3a85cdf0d620968), so a site serves them from
// its own mirror. gpuform never downloads onto a node from the internet.
func enrootNotOffered(family string, s pkgSet, arch string) string {
	v := s.want
	if len(versionParts(v)) < 3 {
		return "enroot " + v + " is in no repository this node uses. NVIDIA publishes enroot as release files, not in a repository (https://github.com/NVIDIA/enroot/releases): put the release's packages for this node in a repository it uses (a site mirror), then apply again"
	}
	var files []string
	for _, name := range s.names {
		u := "https://github.com/NVIDIA/enroot/releases/download/v" + v + "/"
		if family == FamilyDebian {
			u += name + "_" + v + "-1_" + debArch(arch) + ".deb"
		} else {
			u += name + "-" + v + "-1.el8." + arch + ".rpm"
		}
		files = append(files, u)
	}
	return "enroot " + v + " is in no repository this node uses. NVIDIA publishes enroot as release files, not in a repository: put " + strings.Join(files, " and ") + " in a repository this node uses (a site mirror), then apply again"
}

// debArch is dpkg's name of a machine architecture (uname -m).
func debArch(arch string) string {
	switch arch {
	case "x86_64", "":
		return "amd64"
	case "aarch64":
		return "arm64"
	}
	return arch
}
