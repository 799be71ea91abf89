package outlier

import "slices"

// Pair is one measurement taken between two nodes together (a 2-node
// nccl-tests run's busbw): neither node alone is measured, so a slow node
// shows only as the common member of slow pairs.
type Pair struct {
	// Hosts are the two nodes.
	Hosts [2]string `json:"hosts"`
	// V is the measured value; higher is better.
	V float64 `json:"value"`
}

// Straggler is a node whose every pair was slow.
type Straggler struct {
	// Host is the node.
	Host string `json:"host"`
	// Pairs is how many pairs it was in; all of them were slow.
	Pairs int `json:"pairs"`
	// Median is the median of all pairs' values.
	Median float64 `json:"median"`
	// BestPair is the largest of its pairs' values: even its best pair was slow.
	BestPair float64 `json:"best_pair"`
}

// Stragglers names the nodes that are in at least two pairs, every one of
// them more than margin below the median of all pairs (margin <= 0 means
// DefaultMargin), while at least one of their partners was also in a pair
// that was not slow: the slowness follows the node, not its partners. A
// node in only one pair is never named (its partner may be the slow one).
// The result is sorted by host.
func Stragglers(pairs []Pair, margin float64) []Straggler {
	if margin <= 0 {
		margin = DefaultMargin
	}
	if len(pairs) < MinPeers {
		return nil
	}
	vs := make([]Value, len(pairs))
	for i, p := range pairs {
		vs[i] = Value{V: p.V}
	}
	m := median(vs)
	if m <= 0 {
		return nil
	}
	slow := func(p Pair) bool { return (m-p.V)/m > margin }
	type tally struct {
		n, slow int
		best    float64
		partner []string
	}
	by := map[string]*tally{}
	var order []string
	for _, p := range pairs {
		for i, h := range p.Hosts {
			t := by[h]
			if t == nil {
				t = &tally{}
				by[h] = t
				order = append(order, h)
			}
			t.n++
			if slow(p) {
				t.slow++
			}
			t.best = max(t.best, p.V)
			t.partner = append(t.partner, p.Hosts[1-i])
		}
	}
	var out []Straggler
	for _, h := range order {
		t := by[h]
		if t.n < 2 || t.slow < t.n {
			continue
		}
		// A partner that was fast with someone else clears the partner
		// side of the slow pair.
		cleared := false
		for _, q := range t.partner {
			if by[q].slow < by[q].n {
				cleared = true
			}
		}
		if cleared {
			out = append(out, Straggler{Host: h, Pairs: t.n, Median: m, BestPair: t.best})
		}
	}
	slices.SortFunc(out, func(a, b Straggler) int {
		if a.Host < b.Host {
			return -1
		}
		if a.Host > b.Host {
			return 1
		}
		return 0
	})
	return out
}
