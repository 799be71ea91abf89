package spec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// hostsInOneNode reports hosts that a second node block lists again, at
// that second listing, with the first listing's place: which block's
// desired state such a host would follow would be a matter of order, so
// plan refuses it and validate must too. Hosts compare as written, as plan
// selects them; lint's duplicate_host also catches other spellings of one
// machine (GPU001, gpu001:22). One diagnostic per written host expression
// and earlier node, so gpu[001-032] in two nodes is one error, not 32.
func hostsInOneNode(nodes []*Node) hcl.Diagnostics {
	type listing struct {
		node string
		rng  hcl.Range
	}
	type group struct {
		prev  listing
		node  string
		rng   hcl.Range
		hosts []string
	}
	seen := map[string]listing{}
	groups := map[[2]string]*group{}
	var order []*group
	for _, n := range nodes {
		for _, h := range n.Hosts {
			prev, dup := seen[h.Name]
			if !dup {
				seen[h.Name] = listing{node: n.Name, rng: h.Range}
				continue
			}
			if prev.node == n.Name {
				continue // reported as "Duplicate host" within the node
			}
			rng := h.Range
			if rng.Filename == "" {
				rng = n.HostsRange
			}
			k := [2]string{rng.String(), prev.node}
			g := groups[k]
			if g == nil {
				g = &group{prev: prev, node: n.Name, rng: rng}
				groups[k] = g
				order = append(order, g)
			}
			g.hosts = append(g.hosts, h.Name)
		}
	}
	var diags hcl.Diagnostics
	for _, g := range order {
		what := "Host " + g.hosts[0]
		if len(g.hosts) > 1 {
			what = fmt.Sprintf("Hosts %s", strings.Join(g.hosts[:min(3, len(g.hosts))], ", "))
			if len(g.hosts) > 3 {
				what += fmt.Sprintf(" (and %d more)", len(g.hosts)-3)
			}
		}
		verb, it := "is", "it"
		if len(g.hosts) > 1 {
			verb, it = "are", "them"
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("%s %s in node %q and node %q", what, verb, g.prev.node, g.node),
			Detail:   fmt.Sprintf("A host can follow only one node block. Node %q lists %s first, at %s; remove %s from one of the two node blocks (split the inventory if needed).", g.prev.node, it, g.prev.rng, it),
			Subject:  g.rng.Ptr(),
		})
	}
	return diags
}

// emptyHostsDiag reports a node block whose hosts list is empty: it would
// configure nothing, and plan refuses a spec without hosts.
func emptyHostsDiag(rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "No hosts",
		Detail:   "A node block applies its settings to the hosts it lists, and this one lists none. List at least one host, as in hosts = [\"gpu[001-004]\"] or hosts = inventory.NAME, or remove the node block.",
		Subject:  rng.Ptr(),
	}
}
