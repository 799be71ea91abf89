package spec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// topologyUnchecked warns about a node without hardware whose blocks only
// make sense against a topology (NUMA binds, GPU-NIC affinity, workloads):
// lint's rules for them need the GPU count, memory, NUMA nodes and NICs,
// and skip the node without saying so, which reads as "checked and fine".
func topologyUnchecked(n *Node) hcl.Diagnostics {
	var what []string
	if n.NUMA != nil && len(n.NUMA.Binds) > 0 {
		what = append(what, "numa binds")
	}
	if n.Affinity != nil {
		what = append(what, "affinity")
	}
	for _, w := range n.Workloads {
		if w != nil {
			what = append(what, fmt.Sprintf("workload %q", w.Name))
		}
	}
	if len(what) == 0 {
		return nil
	}
	list := strings.Join(what, ", ")
	if len(what) > 1 {
		list = strings.Join(what[:len(what)-1], ", ") + " and " + what[len(what)-1]
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagWarning,
		Summary:  "Topology rules skipped",
		Detail: fmt.Sprintf("Node %q has no hardware attribute, so its %s cannot be checked against the GPUs, memory, NUMA nodes and NICs of its hosts: lint skips those rules for this node. "+
			"Describe the hosts with hardware = { ... } or a built-in module such as gpuform/hgx-h100-8gpu; gpuform import writes it from a host's facts.", n.Name, list),
		Subject: n.DeclRange.Ptr(),
	}}
}
