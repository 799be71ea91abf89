package lint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/spec"
)

// nvlinkDomainReleasesRule declares nvlink_domain_releases.
func nvlinkDomainReleasesRule() Rule {
	return Rule{
		Name:     "nvlink_domain_releases",
		Severity: Error,
		Summary:  "The hosts of one NVLink domain would not run the same driver, kernel modules, Fabric Manager and IMEX releases.",
		Check:    checkNVLinkDomainReleases,
	}
}

// nvlinkDomainSizeRule declares nvlink_domain_size.
func nvlinkDomainSizeRule() Rule {
	return Rule{
		Name:     "nvlink_domain_size",
		Severity: Error,
		Summary:  "An NVLink domain holds more GPUs than the hardware's NVLink domain reaches.",
		Check:    checkNVLinkDomainSize,
	}
}

// domainMember is one node block's share of an NVLink domain.
type domainMember struct {
	node   *spec.Node
	domain *spec.NVLinkDomain
}

// nvlinkDomains groups the nvlink_domain blocks of every node by name, in
// spec order.
func nvlinkDomains(ctx *Context) ([]string, map[string][]domainMember) {
	var names []string
	by := map[string][]domainMember{}
	for _, n := range ctx.Nodes() {
		for _, d := range n.NVLinkDomains {
			if d == nil {
				continue
			}
			if _, ok := by[d.Name]; !ok {
				names = append(names, d.Name)
			}
			by[d.Name] = append(by[d.Name], domainMember{n, d})
		}
	}
	return names, by
}

// domainReleases is what a node block would install on its hosts, as the
// domain must agree on it: the driver release (the lock file's exact pin
// where it has one), the kernel modules, and whether Fabric Manager and
// IMEX run (both at the driver's release).
type domainReleases struct {
	driver, kernel string
	fm, imex       bool
	// ranges of the attributes, for the finding.
	driverAt, kernelAt, fmAt, imexAt hcl.Range
}

func releasesOf(ctx *Context, n *spec.Node) domainReleases {
	r := domainReleases{driver: "none", kernel: "unset", driverAt: n.DeclRange, kernelAt: n.DeclRange, fmAt: n.DeclRange, imexAt: n.DeclRange}
	d := n.Driver
	if d == nil {
		return r
	}
	r.driverAt, r.kernelAt = at(d.Version, d.DeclRange), at(d.KernelModule, d.DeclRange)
	r.fmAt, r.imexAt = at(d.FabricManager, d.DeclRange), at(d.IMEX, d.DeclRange)
	if d.Version.Set {
		r.driver = d.Version.V.Raw
	}
	if p, ok := ctx.Pinned(n.Name, spec.ComponentDriver); ok {
		r.driver = p
	}
	if d.KernelModule.Set {
		r.kernel = string(d.KernelModule.V)
	}
	r.fm = fmOn(d)
	r.imex = d.IMEX.Set && d.IMEX.V
	return r
}

func checkNVLinkDomainReleases(ctx *Context) {
	names, by := nvlinkDomains(ctx)
	for _, name := range names {
		members := by[name]
		first := members[0]
		want := releasesOf(ctx, first.node)
		hosts := 0
		for _, m := range members {
			hosts += len(m.domain.Hosts)
		}
		for _, m := range members[1:] {
			if m.node == first.node {
				continue
			}
			got := releasesOf(ctx, m.node)
			for _, diff := range []struct {
				what       string
				want, got  string
				rng        hcl.Range
				resolution string
			}{
				{"driver", want.driver, got.driver, got.driverAt, "pin one driver release for the whole domain"},
				{"kernel_module", want.kernel, got.kernel, got.kernelAt, "use the same kernel modules on every tray"},
				{"fabric_manager", fmt.Sprint(want.fm), fmt.Sprint(got.fm), got.fmAt, "enable Fabric Manager on all of the domain's trays or on none"},
				{"imex", fmt.Sprint(want.imex), fmt.Sprint(got.imex), got.imexAt, "run IMEX on every tray of the domain"},
			} {
				if diff.what == "driver" && sameDriverRelease(diff.want, diff.got) {
					continue
				}
				if diff.want == diff.got {
					continue
				}
				ctx.Report(diff.rng,
					fmt.Sprintf("%s: NVLink domain %q would run %s %s here and %s on %s", nodeRef(m.node), name, diff.what, diff.got, diff.want, nodeRef(first.node)),
					fmt.Sprintf("The %d hosts of an NVLink domain share one fabric: their GPUs map each other's memory through IMEX, and the driver, its kernel modules, Fabric Manager and IMEX must be the same release on every one of them (NVIDIA's IMEX guide, https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/gettingstarted.html: IMEX checks the loaded driver stack's version when it starts and aborts on one it is not compatible with). A tray on another release drops out of the domain. %s, or move the tray out of nvlink_domain %q.", hosts, strings.ToUpper(diff.resolution[:1])+diff.resolution[1:], name))
			}
		}
		// A branch resolves on each tray when it is installed: trays set up
		// on different days can land on different releases.
		if hosts < 2 {
			continue
		}
		for _, m := range members {
			d := m.node.Driver
			if d == nil || !d.Version.Set {
				continue
			}
			if _, pinned := ctx.Pinned(m.node.Name, spec.ComponentDriver); pinned {
				continue
			}
			if v, ok := nodeDriver(m.node); ok && !v.IsExact() {
				ctx.ReportAs(Warning, d.Version.Range,
					fmt.Sprintf("%s: driver %q floats across the %d hosts of NVLink domain %q", nodeRef(m.node), d.Version.V.Raw, hosts, name),
					"A branch-only version is resolved on each host when apply installs it, so a tray installed or rebuilt after a repository update lands on another release than its peers, and an NVLink domain must run one release. Pin the exact driver release, or lock it with `gpuform lock`.")
			}
		}
	}
}

func checkNVLinkDomainSize(ctx *Context) {
	names, by := nvlinkDomains(ctx)
	for _, name := range names {
		gpus := 0
		var hosts []string
		reach := 0
		known := true
		for _, m := range by[name] {
			if m.domain.FromFabric {
				// Read from the fabric: the block holds as many racks
				// as its hosts' cliques, which plan reads and splits.
				known = false
				break
			}
			g := gpuCount(m.node.Hardware)
			if g == 0 || m.node.Hardware.NVLinkDomain == 0 {
				known = false
				break
			}
			gpus += g * len(m.domain.Hosts)
			hosts = append(hosts, m.domain.Hosts...)
			if reach == 0 || m.node.Hardware.NVLinkDomain < reach {
				reach = m.node.Hardware.NVLinkDomain
			}
		}
		if !known || gpus <= reach {
			continue
		}
		last := by[name][len(by[name])-1]
		slices.Sort(hosts)
		ctx.Report(last.domain.HostsRange,
			fmt.Sprintf("NVLink domain %q has %d GPUs on %d hosts, more than the %d its hardware's NVLink domain reaches", name, gpus, len(hosts), reach),
			fmt.Sprintf("%s declares nvlink_domain = %d: that many GPUs share one NVLink fabric (an NVL72 rack is 18 trays of 4). A domain of more hosts is two racks, whose GPUs do not reach each other over NVLink and whose IMEX daemons cannot form one domain. Split the hosts into one nvlink_domain block per rack (%s).", hwName(last.node.Hardware), reach, strings.Join(hosts[:min(3, len(hosts))], ", ")+map[bool]string{true: ", …", false: ""}[len(hosts) > 3]))
	}
}
