// Package lockfile works out what a spec's lock file must record: the exact
// release of every versioned component of every node. Exact versions come
// from the spec; a floating one ("580", "12.8") is resolved to the release
// the node's hosts actually run, and all of them must agree. It reads facts;
// it reaches no host itself and writes no file.
package lockfile

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// NeedsFacts reports whether a node has a floating version, so that its
// hosts must be probed to lock it.
func NeedsFacts(n *spec.Node) bool {
	for _, a := range spec.NodeVersions(n) {
		if !a.V.IsExact() {
			return true
		}
	}
	return false
}

// Resolve builds the lock for cfg. hostFacts holds the probed facts of the
// hosts of every node with a floating version, by host name. A floating
// version that no host runs, or that the hosts run in different releases,
// is an error at the spec's attribute: gpuform will not guess which release
// to pin.
func Resolve(k *kb.KB, cfg *spec.Config, hostFacts map[string]*facts.Node) (*spec.Lock, hcl.Diagnostics) {
	return resolve(k, cfg, hostFacts, nil)
}

// Offers are the releases each host's package repositories offer, by host
// name and lock file component ("driver"), as upstream releases
// ("535.216.01"); a component a host was asked about and offers nothing of
// is present with no releases.
type Offers map[string]map[spec.Component][]string

// Upgrade builds the lock for cfg like Resolve, but resolves each floating
// version to the newest release of its branch that the hosts' package
// repositories offer, so that the lock can move forward to a release no
// host runs yet. Every host of the node must offer the same newest
// release; when they disagree or offer none, the error lists what each
// host runs and offers.
func Upgrade(k *kb.KB, cfg *spec.Config, hostFacts map[string]*facts.Node, offers Offers) (*spec.Lock, hcl.Diagnostics) {
	if offers == nil {
		offers = Offers{}
	}
	return resolve(k, cfg, hostFacts, offers)
}

// nodePins is the walk Resolve, Upgrade and FromLock share: every version
// the node declares, an exact one as written, a floating one as floating
// resolves it (no pin when it returns an empty version).
func nodePins(n *spec.Node, floating func(spec.Component, *spec.Attr[spec.Version]) (spec.Version, hcl.Diagnostics)) (map[spec.Component]spec.Attr[spec.Version], hcl.Diagnostics) {
	var diags hcl.Diagnostics
	pins := map[spec.Component]spec.Attr[spec.Version]{}
	versions := spec.NodeVersions(n)
	for _, comp := range spec.Components() {
		a, ok := versions[comp]
		if !ok {
			continue
		}
		if a.V.IsExact() {
			pins[comp] = *a
			continue
		}
		v, d := floating(comp, a)
		diags = append(diags, d...)
		if v.Raw != "" {
			pins[comp] = spec.Attr[spec.Version]{V: v, Set: true, Range: a.Range}
		}
	}
	return pins, diags
}

func resolve(k *kb.KB, cfg *spec.Config, hostFacts map[string]*facts.Node, offers Offers) (*spec.Lock, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	lock := &spec.Lock{Nodes: map[string]map[spec.Component]spec.Attr[spec.Version]{}}
	for _, n := range cfg.Nodes {
		pins, d := nodePins(n, func(comp spec.Component, a *spec.Attr[spec.Version]) (spec.Version, hcl.Diagnostics) {
			if offers != nil {
				return newestOffered(k, n, comp, a, hostFacts, offers)
			}
			seen := map[string][]string{}
			for _, h := range n.Hosts {
				f := hostFacts[h.Name]
				if f == nil {
					continue
				}
				v := Installed(k, f, comp, a.V)
				if v == "" {
					v = "(none)"
				}
				seen[v] = append(seen[v], h.Name)
			}
			return agree(n, comp, a, seen)
		})
		diags = append(diags, d...)
		if v, ok := pins[spec.ComponentDriver]; ok && n.Driver != nil && n.Driver.FabricManager.V {
			// The lock records what is installed: the fabric manager
			// release the hosts run when they all run the same one, else
			// the driver's (the release plan installs, since fabric
			// manager must equal the driver).
			pins[spec.ComponentFabricManager] = v
			if offers != nil {
				// Moving forward: the fabric manager follows the new
				// driver release, not the one installed.
				lock.Nodes[n.Name] = pins
				continue
			}
			seen := map[string]bool{}
			for _, h := range n.Hosts {
				if f := hostFacts[h.Name]; f != nil {
					seen[Installed(k, f, spec.ComponentFabricManager, spec.Version{})] = true
				}
			}
			if len(seen) == 1 {
				for raw := range seen {
					if fv, err := spec.ParseVersion(raw); raw != "" && err == nil && fv.IsExact() {
						pins[spec.ComponentFabricManager] = spec.Attr[spec.Version]{V: fv, Set: true, Range: v.Range}
					}
				}
			}
		}
		if len(pins) > 0 {
			lock.Nodes[n.Name] = pins
		}
	}
	return lock, diags
}

func agree(n *spec.Node, comp spec.Component, a *spec.Attr[spec.Version], seen map[string][]string) (spec.Version, hcl.Diagnostics) {
	if len(seen) == 0 {
		return spec.Version{}, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot lock a floating version",
			Detail:   fmt.Sprintf("Node %q asks for %s %s, and no host of it could be probed to see which release it runs.", n.Name, comp, a.V),
			Subject:  a.Range.Ptr(),
		}}
	}
	if len(seen) > 1 || seen["(none)"] != nil {
		var parts []string
		for _, v := range sortedKeys(seen) {
			parts = append(parts, fmt.Sprintf("%s on %s", v, strings.Join(seen[v], ", ")))
		}
		why := "the hosts run different releases"
		if len(seen) == 1 {
			why = "no host runs a release of it"
		}
		return spec.Version{}, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot lock a floating version",
			Detail:   fmt.Sprintf("Node %q asks for %s %s, but %s: %s. Run gpuform lock -upgrade to lock the newest release of %s the hosts' package repositories offer (the next apply installs it), write the exact release in the spec, or converge the hosts first.", n.Name, comp, a.V, why, strings.Join(parts, "; "), a.V),
			Subject:  a.Range.Ptr(),
		}}
	}
	for raw := range seen {
		v, err := spec.ParseVersion(raw)
		if err != nil || !v.IsExact() {
			return spec.Version{}, hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Cannot lock a floating version",
				Detail:   fmt.Sprintf("Node %q runs %s %q, which is not an exact release gpuform can pin.", n.Name, comp, raw),
				Subject:  a.Range.Ptr(),
			}}
		}
		return v, nil
	}
	return spec.Version{}, nil
}

// Installed returns the release of a component a host runs within the
// branch or series want, or "" when it runs none. For the driver, the
// loaded kernel module and the installed packages are all candidates and
// the newest within the branch wins: after an upgrade that waits for a
// reboot, the installed package is what the host will run, and pinning the
// older loaded module would make plan downgrade the package.
func Installed(k *kb.KB, f *facts.Node, comp spec.Component, want spec.Version) string {
	var candidates []string
	switch comp {
	case spec.ComponentDriver:
		if f.Driver != nil {
			candidates = append(candidates, f.Driver.Version)
		}
	case spec.ComponentCUDA:
		for _, t := range f.CUDAToolkits {
			candidates = append(candidates, t.Version)
		}
	}
	// Which installed packages carry a component's release is knowledge
	// base data (installed-packages.tsv), as every package name is.
	for _, p := range k.InstalledPackages(comp) {
		for name := range f.Packages.Installed {
			// NVIDIA's branch pinning package matches the driver's
			// "nvidia-driver" prefix, but its version says nothing
			// about the installed release.
			if p.Matches(name) && !strings.HasPrefix(name, "nvidia-driver-pinning-") {
				candidates = append(candidates, packageVersion(f, name))
			}
		}
	}
	best := spec.Version{}
	for _, c := range candidates {
		v, err := spec.ParseVersion(c)
		if err != nil || !v.Within(want) {
			continue
		}
		if best.Raw == "" || v.Compare(best) > 0 {
			best = v
		}
	}
	return best.Raw
}

// packageVersion is the upstream release of an installed package: without
// the epoch ("1:"), the package revision ("-1") and build suffixes
// ("+cuda12.8").
func packageVersion(f *facts.Node, name string) string {
	v, ok := f.Package(name)
	if !ok {
		return ""
	}
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[i+1:]
	}
	if i := strings.IndexAny(v, "-+~"); i >= 0 {
		v = v[:i]
	}
	return v
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// newestOffered is the newest release within a.V that every host of n
// offers; an error at the attribute lists each host's release and offer
// otherwise.
func newestOffered(k *kb.KB, n *spec.Node, comp spec.Component, a *spec.Attr[spec.Version], hostFacts map[string]*facts.Node, offers Offers) (spec.Version, hcl.Diagnostics) {
	newest := map[string][]string{}
	var lines []string
	for _, h := range n.Hosts {
		f := hostFacts[h.Name]
		if f == nil {
			continue
		}
		best := spec.Version{}
		var within []spec.Version
		for _, raw := range offers[h.Name][comp] {
			v, err := spec.ParseVersion(raw)
			if err != nil || !v.IsExact() || !v.Within(a.V) {
				continue
			}
			within = append(within, v)
			if best.Raw == "" || v.Compare(best) > 0 {
				best = v
			}
		}
		key := best.Raw
		if key == "" {
			key = "(none)"
		}
		newest[key] = append(newest[key], h.Name)
		runs := Installed(k, f, comp, spec.Version{})
		if runs == "" {
			runs = "nothing"
		}
		sort.Slice(within, func(i, j int) bool { return within[i].Compare(within[j]) > 0 })
		offered := make([]string, len(within))
		for i, v := range within {
			offered[i] = v.Raw
		}
		offer := "nothing of " + a.V.Raw
		if len(offered) > 0 {
			offer = strings.Join(offered, ", ")
		}
		lines = append(lines, fmt.Sprintf("%s runs %s and offers %s", h.Name, runs, offer))
	}
	if len(newest) == 0 {
		return spec.Version{}, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot upgrade a floating version",
			Detail:   fmt.Sprintf("Node %q asks for %s %s, and no host of it could be asked which releases its repositories offer.", n.Name, comp, a.V),
			Subject:  a.Range.Ptr(),
		}}
	}
	if len(newest) == 1 && newest["(none)"] == nil {
		for raw := range newest {
			v, _ := spec.ParseVersion(raw)
			return v, nil
		}
	}
	why := "the hosts' repositories offer different newest releases"
	if len(newest) == 1 {
		why = "no host's repositories offer a release of it"
	}
	return spec.Version{}, hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Cannot upgrade a floating version",
		Detail:   fmt.Sprintf("Node %q asks for %s %s, but %s: %s. Refresh the package lists on the hosts (apt-get update / dnf makecache), or write the exact release in the spec.", n.Name, comp, a.V, why, strings.Join(lines, "; ")),
		Subject:  a.Range.Ptr(),
	}}
}
