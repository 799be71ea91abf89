package graph

import (
	"strings"

	"github.com/gpuform/gpuform/provision/plan"
)

// Picture is one topology and the hosts that share it.
type Picture struct {
	// Nodes are the spec's node blocks the hosts belong to, in first-seen
	// order; empty for a root probed without a spec.
	Nodes []string
	// Hosts are the hosts drawn, in the order given.
	Hosts []string
	// Topology is what they look like.
	Topology *Topology
}

// Heading names the picture: its node blocks and its hosts folded the way
// plan folds them (gpu[001-004]).
func (p Picture) Heading() string {
	h := plan.FoldHosts(p.Hosts)
	if len(p.Nodes) == 0 {
		return h
	}
	return "node " + strings.Join(p.Nodes, ", ") + ": " + h
}

// Group merges pictures whose topologies draw the same, so that 500
// identical hosts read as one picture listing them, in order of each
// group's first host (as plan.Plan.Groups groups identical plans).
func Group(pics []Picture) []Picture {
	var out []Picture
	index := map[string]int{}
	for _, p := range pics {
		key := p.Topology.Signature()
		i, ok := index[key]
		if !ok {
			index[key] = len(out)
			out = append(out, Picture{Topology: p.Topology})
			i = len(out) - 1
		}
		g := &out[i]
		g.Hosts = append(g.Hosts, p.Hosts...)
		for _, n := range p.Nodes {
			if !contains(g.Nodes, n) {
				g.Nodes = append(g.Nodes, n)
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
