package lint

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/spec"
)

func hygieneRules() []Rule {
	return []Rule{
		{
			Name:     "version_not_pinned",
			Severity: Warning,
			Summary:  "A version floats (a branch such as \"550\") and the lock file does not pin it.",
			Check:    checkVersionPinned,
		},
		{
			Name:     "duplicate_host",
			Severity: Error,
			Summary:  "The same host is the target of two nodes (or listed twice in one).",
			Check:    checkDuplicateHost,
		},
		{
			Name:     "inventory_user_conflict",
			Severity: Error,
			Summary:  "The same host is in two inventories with different SSH users.",
			Check:    checkInventoryUsers,
		},
	}
}

// pinnedComponent is one versioned component of a node with the number of
// dot-separated parts that makes its version a single release.
type pinnedComponent struct {
	name    string
	version spec.Attr[spec.Version]
	exactAt int
}

func nodeComponents(n *spec.Node) []pinnedComponent {
	var out []pinnedComponent
	if n.Driver != nil {
		// Driver releases have two or three parts (570.26, 550.127.08).
		out = append(out, pinnedComponent{"driver", n.Driver.Version, 2})
	}
	for _, c := range []struct {
		name string
		c    *spec.Component
	}{{"cuda", n.CUDA}, {"nccl", n.NCCL}, {"dcgm", n.DCGM}} {
		if c.c != nil {
			out = append(out, pinnedComponent{c.name, c.c.Version, 3})
		}
	}
	if n.Container != nil {
		out = append(out, pinnedComponent{"nvidia_container_toolkit", n.Container.NvidiaContainerToolkit, 3})
	}
	return out
}

func checkVersionPinned(ctx *Context) {
	for _, n := range ctx.Nodes() {
		for _, c := range nodeComponents(n) {
			v := c.version
			if !v.Set || v.V.IsZero() || len(v.V.Parts) >= c.exactAt {
				continue
			}
			if _, ok := ctx.Pinned(n.Name, c.name); ok {
				continue
			}
			ctx.Report(v.Range,
				fmt.Sprintf("%s: %s version %q is not an exact release", nodeRef(n), c.name, v.V.Raw),
				fmt.Sprintf("%q floats: each host resolves it to whatever the repository offers on the day it is applied, so hosts that were meant to be identical drift apart and a re-apply can upgrade a running fleet. Pin the exact release, or run `gpuform lock` and commit .gpuform.lock.hcl so the lock file records it.", v.V.Raw))
		}
	}
}

type hostSeen struct {
	node  string
	rng   hcl.Range
	where string
}

func checkDuplicateHost(ctx *Context) {
	first := map[string]hostSeen{}
	// One finding per written host expression and earlier node, so a range
	// like gpu[001-032] shared by two nodes is one finding, not 32.
	type key struct {
		rng  hcl.Range
		prev string
	}
	groups := map[key][]string{}
	var order []key
	for _, n := range ctx.Nodes() {
		for _, h := range n.Hosts {
			if prev, ok := first[hostKey(h)]; ok {
				k := key{h.Range, prev.node}
				if h.Range.Filename == "" {
					k.rng = n.HostsRange
				}
				if _, seen := groups[k]; !seen {
					order = append(order, k)
				}
				groups[k] = append(groups[k], h.Name)
				continue
			}
			first[hostKey(h)] = hostSeen{node: n.Name, rng: h.Range}
		}
	}
	for _, k := range order {
		hosts := groups[k]
		ctx.Report(k.rng,
			fmt.Sprintf("%s also targeted by node %q", hostList(hosts), k.prev),
			"Two node blocks would both converge the same machine to different wishes, and each apply undoes the other. Every host belongs to exactly one node; remove it from one of them (split the inventory if needed).")
	}
}

// hostKey is the machine a host entry reaches: host names compare without
// case (DNS does), without a login user, and with SSH's default port
// written out, so GPU001 and gpu001, or gpu002:22 and gpu002, are one host.
// sim:// and local:// addresses compare as written, in lower case.
func hostKey(h spec.Host) string {
	name := h.Name
	if strings.Contains(name, "://") {
		return strings.ToLower(name)
	}
	if i := strings.LastIndex(name, "@"); i >= 0 {
		name = name[i+1:]
	}
	port := h.Port
	if host, p, err := net.SplitHostPort(name); err == nil {
		if n, err := strconv.Atoi(p); err == nil {
			name, port = host, n
		}
	}
	if port == 0 {
		port = 22
	}
	name = strings.TrimSuffix(strings.Trim(name, "[]"), ".")
	return net.JoinHostPort(strings.ToLower(name), strconv.Itoa(port))
}

func hostList(hosts []string) string {
	if len(hosts) == 1 {
		return fmt.Sprintf("Host %s is", hosts[0])
	}
	if len(hosts) <= 3 {
		return fmt.Sprintf("Hosts %v are", hosts)
	}
	return fmt.Sprintf("%d hosts (%s, %s, … %s) are", len(hosts), hosts[0], hosts[1], hosts[len(hosts)-1])
}

func checkInventoryUsers(ctx *Context) {
	names := make([]string, 0, len(ctx.Config.Inventories))
	for name, inv := range ctx.Config.Inventories {
		if inv != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	type seen struct {
		inv, user string
	}
	first := map[string]seen{}
	type key struct {
		rng       hcl.Range
		inv, prev string
		user, was string
	}
	groups := map[key][]string{}
	var order []key
	for _, name := range names {
		inv := ctx.Config.Inventories[name]
		for _, h := range inv.Hosts {
			prev, ok := first[h.V]
			if !ok {
				first[h.V] = seen{inv: name, user: inv.User.V}
				continue
			}
			if prev.inv == name || prev.user == inv.User.V {
				continue
			}
			k := key{h.Range, name, prev.inv, inv.User.V, prev.user}
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], h.V)
		}
	}
	for _, k := range order {
		ctx.Report(k.rng,
			fmt.Sprintf("%s in inventory %q as user %s but in inventory %q as user %s", hostList(groups[k]), k.inv, quoteUser(k.user), k.prev, quoteUser(k.was)),
			"gpuform would reach the same machine with two identities depending on which node names it, so one of them fails (or, worse, runs with other privileges). Use one user per host: move the host to a single inventory or align the user attributes.")
	}
}

func quoteUser(u string) string {
	if u == "" {
		return "(default)"
	}
	return fmt.Sprintf("%q", u)
}
