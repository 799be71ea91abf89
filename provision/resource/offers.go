package resource

import (
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// Missing is a package release a change installs that the host's
// repositories do not offer: plan refuses the host before anything runs
// (preflight), instead of an apply that stops at the step that needs it.
type Missing struct {
	// Package is the package name.
	Package string
	// Release is what was looked for: an exact version, or the release
	// or series with the version pattern the package manager is given.
	Release string
	// Offered are the versions of Package the repositories do offer,
	// newest first (a few).
	Offered []string
	// Hint says where the release comes from when it is not published in
	// a repository (enroot's release files, pyxis built from source).
	Hint string
}

// OfferedNames lists the packages node n may install, on a host of
// either package family (the probe that asks about them runs before the
// family is known), for facts.Options.Packages; nil when it installs none.
func OfferedNames(k *kb.KB, n *spec.Node) []string {
	names := map[string]bool{}
	for _, os := range []facts.OS{{ID: "debian"}, {ID: "rhel"}} {
		in := newBuildInput(k, n, &facts.Node{OS: os})
		for _, b := range builders() {
			if !packageBuilder(b.name) {
				continue
			}
			rs, _, err := b.build(in)
			if err != nil {
				continue
			}
			for _, r := range rs {
				if p, ok := r.(*pkgResource); ok && p.validate() == nil {
					for _, name := range p.set.names {
						names[name] = true
					}
				}
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(names))
}

// packageBuilder reports whether the builder of the named resource makes
// package resources.
func packageBuilder(name string) bool {
	switch name {
	case DriverPackage, FabricManager, CUDAToolkit, NCCL, DCGM, ContainerToolkit, EnrootPackage, PyxisPackage, ApptainerPackage:
		return true
	}
	return false
}

// floating reports whether a version names a branch or series ("580",
// "12.8") rather than one release (spec.ExactParts parts, or a revision).
func floating(v string) bool {
	return !strings.Contains(v, "-") && len(versionParts(v)) < spec.ExactParts
}

// withinRelease reports whether the package version v is a release of
// want: want itself, a release of the branch or series want names, or,
// for a want with a revision, that very version.
func withinRelease(v, want string) bool {
	if strings.Contains(want, "-") {
		return versionMatches(v, want)
	}
	u := upstream(v)
	return u == want || strings.HasPrefix(u, want+".")
}

// pinMatcher is the glob a version the package manager will install must
// match for name: its pin, widened to the series for a floating want
// ("2.27-1+cuda12.8" for NCCL 2.27 matches "2.27.3-1+cuda12.8"); "" when
// any version of the release does.
func (r *pkgResource) pinMatcher(name, want string) string {
	pin := r.set.pins[name]
	if pin == "" || !floating(want) {
		return pin
	}
	if i := strings.Index(pin, want); i >= 0 && !strings.HasPrefix(pin[i+len(want):], ".") {
		// "2.21-1+cuda12.4" → "2.21.*-1+cuda12.4", "1:4.6-1" →
		// "1:4.6.*-1"; a pin already widened ("580.*", "4.1.*") stays.
		return pin[:i+len(want)] + ".*" + pin[i+len(want):]
	}
	return pin
}

// pinAccepts reports whether the package manager, given pin, may install
// version v: apt matches "name=pin" against the whole version (a trailing
// '*' as a glob), dnf "name-pin" against the version or version-release.
func (r *pkgResource) pinAccepts(pin, v string) bool {
	if pin == "" {
		return true
	}
	if r.family == FamilyDebian {
		ok, err := path.Match(pin, v)
		return err == nil && ok
	}
	_, noEpoch := cutEpoch(v)
	for _, cand := range []string{v, noEpoch} {
		for _, p := range []string{pin, pin + "-*"} {
			if ok, err := path.Match(p, cand); err == nil && ok {
				return true
			}
		}
	}
	return false
}

func cutEpoch(v string) (string, string) {
	if e, rest, ok := strings.Cut(v, ":"); ok {
		return e, rest
	}
	return "", v
}

// candidates are the versions of name the host offers that the set may
// install as release want, newest first: within want, and accepted by the
// pin the set has for the version the spec wrote.
func (r *pkgResource) candidates(o *facts.Offers, name, want, written string) []string {
	pin := r.pinMatcher(name, written)
	var out []string
	for _, v := range o.Versions[name] {
		if r.set.build != "" && !strings.HasSuffix(v, r.set.build) {
			// Another build of the release (NCCL for another CUDA).
			continue
		}
		if pinPattern.MatchString(v) && withinRelease(v, want) && r.pinAccepts(pin, v) {
			out = append(out, v)
		}
	}
	return out
}

// resolveOffered pins the set to the exact versions the host's repositories
// offer, the way apply's package manager would pick them (the newest that
// matches), so that the plan shows the release that will be installed and
// apply installs exactly that: a floating version ("580", "12.8", "4.1")
// becomes the release of it already installed, else the newest offered. A
// package the repositories do not offer at the release is recorded as
// missing, for plan's preflight. Without offers (nobody asked the host)
// the set stays as written; with no metadata on the host at all (lists
// never refreshed) the release is unresolved, and the plan says so.
func (r *pkgResource) resolveOffered(f *facts.Node) {
	o := f.Offers
	if o == nil || r.validate() != nil || !r.needsInstall(f) {
		return
	}
	written := r.set.want
	if o.Lists == 0 && len(o.Versions) == 0 {
		if floating(written) {
			r.unresolved = "the release of " + written + " is known only after apply: " + listsEmpty(o.Manager)
		}
		return
	}
	release := written
	if name, p, ok := r.set.installedAs(f); ok && name == r.set.names[0] && floating(written) && withinRelease(p.Version, written) {
		// A floating version never moves what is installed: the other
		// packages of the set join it at its release.
		release = upstream(p.Version)
	} else if c := r.candidates(o, r.set.names[0], written, written); len(c) > 0 && floating(written) {
		release = upstream(c[0])
	}
	pins := map[string]string{}
	var missing []Missing
	for _, name := range r.set.names {
		c := r.candidates(o, name, release, written)
		if len(c) == 0 {
			look := release
			if pin := r.pinMatcher(name, written); pin != "" && pin != release && release == written {
				look = pin
			}
			missing = append(missing, Missing{Package: name, Release: look, Offered: firstN(o.Versions[name], 5), Hint: r.notOffered})
			continue
		}
		pins[name] = c[0]
		if r.family != FamilyDebian {
			// dnf takes name-version-release; its epoch is implied.
			_, pins[name] = cutEpoch(c[0])
		}
	}
	if len(missing) > 0 {
		r.missing = missing
		return
	}
	for name, v := range pins {
		r.set.pins[name] = v
	}
	r.resolved = pins
	if release != written {
		r.set.want = release
		if r.from == "" {
			r.from = written
		}
	}
}

// listsEmpty says why nothing could be resolved on a host whose package
// manager holds no repository metadata.
func listsEmpty(manager string) string {
	if manager == "dnf" {
		return "dnf has no cached repository metadata on this host (dnf makecache never ran), so what its repositories offer is not known without the network; apply runs dnf makecache and installs the newest release then. Run dnf makecache on the host and plan again to see it"
	}
	return "apt's package lists on this host are empty (apt-get update never ran), so what its repositories offer is not known without the network; apply refreshes them and installs the newest release then. Run apt-get update on the host and plan again to see it"
}

func firstN(list []string, n int) []string {
	if len(list) > n {
		return append(slices.Clone(list[:n]), "…")
	}
	return slices.Clone(list)
}
