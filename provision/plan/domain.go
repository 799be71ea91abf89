package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/spec"
)

// RolloutDomain is one NVLink domain of a node whose rollout counts
// domains: the node's targeted hosts that share it, in spec order. Apply
// changes them as one unit.
type RolloutDomain struct {
	// Name is the nvlink_domain block's label.
	Name string `json:"name"`
	// Hosts are the domain's hosts the plan covers.
	Hosts []string `json:"hosts"`
}

// domainGuard refuses what would change part of an NVLink domain, before
// anything runs (docs/guide/rack-scale-nvlink.md):
//
//   - node blocks of one domain that would install different driver,
//     kernel module, Fabric Manager or IMEX releases (lint's
//     nvlink_domain_releases): every host of the domain is refused;
//   - for a rollout in domains, a domain whose hosts span node blocks
//     (apply walks one node block at a time), a -target that leaves some
//     of a domain's hosts out, or a host of the domain that could not be
//     planned: the domain's hosts with changes are refused, since apply
//     could only change part of it.
//
// It also fills each node rollout's Domains.
func domainGuard(p *Plan, targets []target.Host) {
	nodes := map[string]*spec.Node{}
	var order []string
	for _, t := range targets {
		if t.Node == nil {
			continue
		}
		if _, ok := nodes[t.Node.Name]; !ok {
			order = append(order, t.Node.Name)
		}
		nodes[t.Node.Name] = t.Node
	}
	type member struct {
		node   *spec.Node
		domain *spec.NVLinkDomain
	}
	resolved, unread := fabricDomains(p, nodes, order)
	var names []string
	by := map[string][]member{}
	for _, name := range order {
		for _, d := range resolved[name] {
			if _, ok := by[d.Name]; !ok {
				names = append(names, d.Name)
			}
			by[d.Name] = append(by[d.Name], member{nodes[name], d})
		}
	}
	targeted := map[string]bool{}
	for _, h := range p.Hosts {
		targeted[h.Host] = true
	}
	for i := range p.Nodes {
		nr := &p.Nodes[i]
		if nr.Unit != spec.RolloutUnitNVLinkDomain {
			continue
		}
		for _, d := range resolved[nr.Name] {
			rd := RolloutDomain{Name: d.Name}
			for _, h := range d.Hosts {
				if targeted[h] {
					rd.Hosts = append(rd.Hosts, h)
				}
			}
			if len(rd.Hosts) > 0 {
				nr.Domains = append(nr.Domains, rd)
			}
		}
	}
	// A domain read from the fabric whose hosts are not all known (a
	// host's fabric is not up or not readable, or -target left it out) is
	// refused whole in a rollout in domains: the unknown host may be in
	// the same rack as any other, and which is not guessed.
	for _, name := range order {
		n := nodes[name]
		if n.Rollout == nil || n.Rollout.Unit.V != spec.RolloutUnitNVLinkDomain {
			continue
		}
		for _, d := range n.NVLinkDomains {
			if !d.FromFabric {
				continue
			}
			us := unreadOf(unread, name, d.Name)
			var why []string
			for _, u := range us {
				why = append(why, u.host+": "+u.why)
			}
			var left []string
			for _, h := range d.Hosts {
				if p.Host(h) == nil {
					left = append(left, h)
				}
			}
			if len(left) > 0 {
				why = append(why, fmt.Sprintf("the plan leaves out %s", shortList(left)))
			}
			if len(why) > 0 {
				refuse(p, d.Hosts, true, fmt.Sprintf("nvlink_domain %q is read from the NVLink fabric, and the domain of %d of its %d hosts is not known (%s): a rollout in domains does not guess which rack a host is in; bring its fabric up, target all of the block's hosts, or list each rack's hosts in an nvlink_domain block", d.Name, len(us)+len(left), len(d.Hosts), strings.Join(why, "; ")))
			}
		}
	}
	for _, name := range names {
		members := by[name]
		var hosts []string
		for _, m := range members {
			hosts = append(hosts, m.domain.Hosts...)
		}
		if why := releaseMismatch(members[0].node, func(yield func(*spec.Node) bool) {
			for _, m := range members[1:] {
				if !yield(m.node) {
					return
				}
			}
		}); why != "" {
			refuse(p, hosts, false, fmt.Sprintf("NVLink domain %q %s (lint rule nvlink_domain_releases): the hosts of a domain must run one release; pin the same one for every node block of the domain", name, why))
			continue
		}
		unit := false
		for _, m := range members {
			if m.node.Rollout != nil && m.node.Rollout.Unit.V == spec.RolloutUnitNVLinkDomain {
				unit = true
			}
		}
		if !unit {
			continue
		}
		if slices.ContainsFunc(members, func(m member) bool { return m.node != members[0].node }) {
			var blocks []string
			for _, m := range members {
				if !slices.Contains(blocks, m.node.Name) {
					blocks = append(blocks, fmt.Sprintf("%q", m.node.Name))
				}
			}
			refuse(p, hosts, true, fmt.Sprintf("NVLink domain %q spans node blocks %s, and apply walks one node block at a time: a rollout in domains could change part of it; put the domain's hosts in one node block", name, strings.Join(slices.Compact(blocks), ", ")))
			continue
		}
		var left []string
		var failed []string
		for _, h := range hosts {
			hp := p.Host(h)
			switch {
			case hp == nil:
				left = append(left, h)
			case hp.Error != "":
				failed = append(failed, h)
			}
		}
		switch {
		case len(left) > 0:
			refuse(p, hosts, true, fmt.Sprintf("the plan leaves out %d of the %d hosts of NVLink domain %q (%s): a rollout in domains changes a domain whole; target all of its hosts", len(left), len(hosts), name, shortList(left)))
		case len(failed) > 0:
			refuse(p, hosts, true, fmt.Sprintf("%d of the %d hosts of NVLink domain %q could not be planned (%s): a rollout in domains changes a domain whole or not at all", len(failed), len(hosts), name, shortList(failed)))
		}
	}
}

// releaseMismatch says how the other node blocks of a domain differ from
// first in what they install: "" when they agree.
func releaseMismatch(first *spec.Node, others func(func(*spec.Node) bool)) string {
	rel := func(n *spec.Node) [4]string {
		d := n.Driver
		if d == nil {
			return [4]string{"none", "", "false", "false"}
		}
		return [4]string{d.Version.V.Raw, string(d.KernelModule.V), fmt.Sprint(d.FabricManager.V), fmt.Sprint(d.IMEX.V)}
	}
	what := [4]string{"driver", "kernel_module", "fabric_manager", "imex"}
	want := rel(first)
	why := ""
	others(func(n *spec.Node) bool {
		got := rel(n)
		for i := range got {
			if got[i] != want[i] {
				why = fmt.Sprintf("would run %s %s on node %q and %s on node %q", what[i], got[i], n.Name, want[i], first.Name)
				return false
			}
		}
		return true
	})
	return why
}

// refuse turns the plans of hosts into errors (only those with changes or
// a pending reboot when onlyChanging): nothing of theirs runs.
func refuse(p *Plan, hosts []string, onlyChanging bool, why string) {
	for _, h := range hosts {
		hp := p.Host(h)
		if hp == nil || hp.Error != "" {
			continue
		}
		if onlyChanging && !hp.HasChanges() && !hp.RebootPending {
			continue
		}
		p.Summary.Add -= hp.Summary.Add
		p.Summary.Change -= hp.Summary.Change
		p.Summary.Destroy -= hp.Summary.Destroy
		hp.Error = why
		hp.ResourceChanges = []ResourceChange{}
		hp.Images = nil
		hp.Summary = Summary{}
		hp.RebootRequired, hp.RebootPending = false, false
		p.Errored = true
	}
}

// shortList names up to three hosts.
func shortList(hosts []string) string {
	if len(hosts) <= 3 {
		return strings.Join(hosts, ", ")
	}
	return strings.Join(hosts[:3], ", ") + fmt.Sprintf(" and %d more", len(hosts)-3)
}

// unreadFabric is a host of a domain read from the fabric whose domain is
// not known.
type unreadFabric struct {
	node, block, host, why string
}

// fabricDomains returns every node's NVLink domains with those read from
// the fabric (from = "fabric") split by the domain each host's GPUs
// registered in (HostPlan.FabricDomain): one domain per fabric cluster
// and clique, named "BLOCK/CLUSTER.CLIQUE" after the first 8 hex digits
// of the cluster UUID (the whole UUID where two clusters share them), in
// the order their first hosts appear. Hosts of such a block whose fabric
// is not known are in none, and listed in unread. Blocks of one name in
// several node blocks share one naming, so a fabric domain spread over
// node blocks is still one domain.
func fabricDomains(p *Plan, nodes map[string]*spec.Node, order []string) (map[string][]*spec.NVLinkDomain, []unreadFabric) {
	out := map[string][]*spec.NVLinkDomain{}
	var unread []unreadFabric
	// The short name of each fabric key of a block name, made unique.
	short := map[string]map[string]string{}
	for _, name := range order {
		for _, d := range nodes[name].NVLinkDomains {
			if !d.FromFabric {
				continue
			}
			if short[d.Name] == nil {
				short[d.Name] = map[string]string{}
			}
			for _, h := range d.Hosts {
				if hp := p.Host(h); hp != nil && hp.FabricDomain != "" {
					short[d.Name][hp.FabricDomain] = ""
				}
			}
		}
	}
	for block, keys := range short {
		count := map[string]int{}
		for k := range keys {
			count[shortFabric(k)]++
		}
		for k := range keys {
			if s := shortFabric(k); count[s] == 1 {
				keys[k] = block + "/" + s
			} else {
				keys[k] = block + "/" + strings.Replace(k, "/", ".", 1)
			}
		}
	}
	for _, name := range order {
		for _, d := range nodes[name].NVLinkDomains {
			if !d.FromFabric {
				out[name] = append(out[name], d)
				continue
			}
			groups := map[string]*spec.NVLinkDomain{}
			for _, h := range d.Hosts {
				hp := p.Host(h)
				if hp == nil {
					continue // not targeted
				}
				if hp.FabricDomain == "" {
					unread = append(unread, unreadFabric{node: name, block: d.Name, host: h, why: hp.FabricError})
					continue
				}
				dn := short[d.Name][hp.FabricDomain]
				g, ok := groups[dn]
				if !ok {
					g = &spec.NVLinkDomain{Name: dn, HostsSet: true, HostsRange: d.HostsRange, DeclRange: d.DeclRange}
					groups[dn] = g
					out[name] = append(out[name], g)
				}
				g.Hosts = append(g.Hosts, h)
			}
		}
	}
	return out, unread
}

// shortFabric is "CLUSTER8.CLIQUE" of a "CLUSTER-UUID/CLIQUE" key.
func shortFabric(key string) string {
	cluster, clique, _ := strings.Cut(key, "/")
	if len(cluster) > 8 {
		cluster = cluster[:8]
	}
	return cluster + "." + clique
}

// unreadOf is the unread hosts of one block of one node.
func unreadOf(unread []unreadFabric, node, block string) []unreadFabric {
	var out []unreadFabric
	for _, u := range unread {
		if u.node == node && u.block == block {
			out = append(out, u)
		}
	}
	return out
}
