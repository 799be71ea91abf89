package plan

import (
	"encoding/json"
	"sort"

	"github.com/gpuform/gpuform/internal/hostrange"
)

// Group is a set of hosts whose plans are identical.
type Group struct {
	// Hosts are the hosts, in plan order.
	Hosts []*HostPlan
}

// Groups returns the hosts grouped by identical plans (same node, same
// changes, same warnings, same error), in order of each group's first
// host, so that 500 identical hosts read as one plan.
func (p *Plan) Groups() []Group {
	var groups []Group
	for _, g := range hostrange.GroupBy(p.Hosts, (*HostPlan).signature) {
		groups = append(groups, Group{Hosts: g.Items})
	}
	return groups
}

// signature is the host's plan as its JSON document writes it, less the
// host's own name and facts: two hosts (or a saved and a fresh plan of one
// host) with the same signature would see the same changes.
func (h *HostPlan) signature() string {
	j := h.toJSON()
	b, _ := json.Marshal(struct {
		Node     string
		Error    string
		Warnings []string
		Images   []imageJSON
		Changes  []resourceChangeJSON
	}{j.Node, j.Error, j.Warnings, j.Images, j.ResourceChanges})
	return string(b)
}

// Names returns the group's host names.
func (g Group) Names() []string {
	out := make([]string, len(g.Hosts))
	for i, h := range g.Hosts {
		out[i] = h.Host
	}
	return out
}

// FoldHosts writes host names compactly, Slurm style: gpu001, gpu002,
// gpu003 and gpu007 become "gpu[001-003,007]" (hostrange.Fold, shared
// with verify and facts reports).
func FoldHosts(names []string) string { return hostrange.Fold(names) }

func sortedHostKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
