package spec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// hostsInOneNode reports every host that a second node block lists again,
// at that second listing: which block's desired state it would follow
// would be a matter of order, so plan refuses it and validate must too.
func hostsInOneNode(nodes []*Node) hcl.Diagnostics {
	var diags hcl.Diagnostics
	type first struct {
		node string
		rng  hcl.Range
	}
	seen := map[string]first{}
	for _, n := range nodes {
		for _, h := range n.Hosts {
			prev, dup := seen[h.Name]
			if !dup {
				seen[h.Name] = first{node: n.Name, rng: h.Range}
				continue
			}
			if prev.node == n.Name {
				continue // reported as "Duplicate host" within the node
			}
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Host %s is in node %q and node %q", h.Name, prev.node, n.Name),
				Detail:   fmt.Sprintf("A host can follow only one node block. %s is first listed in node %q at %s; remove it from one of the two node blocks.", h.Name, prev.node, prev.rng),
				Subject:  h.Range.Ptr(),
			})
		}
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
