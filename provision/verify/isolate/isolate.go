package isolate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/gpuform/gpuform/internal/spelling"
	"github.com/gpuform/gpuform/provision/outlier"
)

// Outcome is one pair run as the caller judged it.
type Outcome struct {
	// Ran is false when the pair could not be run at all (the budget ran
	// out, a node could not be reached, the command could not be
	// rewritten): the pair proves nothing either way.
	Ran bool `json:"ran"`
	// Pass is the judgement against the pair's floor.
	Pass bool `json:"pass"`
	// BusBW is the measured bus bandwidth in GB/s; 0 when none was measured.
	BusBW float64 `json:"busbw_gbps,omitempty"`
	// Floor is the floor the pair was judged against in GB/s; 0 when none.
	Floor float64 `json:"floor_gbps,omitempty"`
	// Message says why the pair failed or did not run.
	Message string `json:"message,omitempty"`
	// Duration is how long the run took.
	Duration time.Duration `json:"duration_ns,omitempty"`
}

// RunFunc runs the group's test on two hosts and judges it. It must
// honour ctx: when ctx ends it returns an Outcome with Ran false.
type RunFunc func(ctx context.Context, hosts [2]string) Outcome

// Options configure Run.
type Options struct {
	// Hosts are the group's hosts in layout order: neighbours (same rack,
	// same leaf switch when the inventory is written that way) pair first.
	Hosts []string
	// Run runs and judges one pair.
	Run RunFunc
	// Deadline ends the isolation: no round starts that would not finish
	// before it, and running pairs are cancelled at it.
	Deadline time.Time
	// Estimate is how long a round is expected to take before any pair has
	// run (the group run's duration is a fair guess: a pair moves no more
	// data); later rounds use the longest pair seen so far.
	Estimate time.Duration
	// Margin is how far below the median of the pairs a passing pair must
	// be to count as slow (outlier.DefaultMargin when 0).
	Margin float64
}

// Pair is one pair run.
type Pair struct {
	// Round numbers the rounds from 1: round 1 pairs neighbours, later
	// rounds re-pair suspects with known-good nodes.
	Round int `json:"round"`
	// Hosts are the two nodes.
	Hosts [2]string `json:"hosts"`
	Outcome
	// Slow is true for a pair that passed its floor but is more than the
	// margin below the median of the pairs.
	Slow bool `json:"slow,omitempty"`
}

// Named is a node the pairs prove bad.
type Named struct {
	// Host is the node.
	Host string `json:"host"`
	// Partners are the nodes it was paired with; it failed with each.
	Partners []string `json:"partners"`
	// Reason says what was proven, in words.
	Reason string `json:"reason"`
}

// Result is what the pairs showed.
type Result struct {
	// Pairs are the pair runs, round by round, in host order.
	Pairs []Pair `json:"pairs"`
	// Culprits are the nodes that failed with every partner, at least one
	// of which passed with another node.
	Culprits []Named `json:"culprits"`
	// Stragglers are the nodes that passed their floors but were slow with
	// every partner (outlier.Stragglers over the pairs).
	Stragglers []outlier.Straggler `json:"stragglers,omitempty"`
	// Complete is false when a suspect could not be decided.
	Complete bool `json:"complete"`
	// Incomplete says why the isolation did not finish, "" when it did.
	Incomplete string `json:"incomplete,omitempty"`
}

// Run isolates the bad nodes of opts.Hosts. Round 1 pairs neighbours
// (hosts 1+2, 3+4, …; an odd last host is a suspect). The nodes of every
// pair that failed, or passed while slow, are suspects; every other node
// of a passing pair is known good. Each suspect is then paired with a
// known-good node it has not met, as many rounds as needed so that no node
// is in two pairs at once. A suspect that fails with that partner too has
// failed with every partner and is named; one that passes is cleared.
func Run(ctx context.Context, opts Options) Result {
	s := &state{opts: opts, estimate: opts.Estimate}
	if len(opts.Hosts) < 2 {
		return Result{Complete: false, Incomplete: "a group of fewer than 2 nodes has no pairs", Pairs: []Pair{}, Culprits: []Named{}}
	}
	var first [][2]string
	for i := 0; i+1 < len(opts.Hosts); i += 2 {
		first = append(first, [2]string{opts.Hosts[i], opts.Hosts[i+1]})
	}
	s.round(ctx, first)

	good, suspects := s.classify()
	if odd := len(opts.Hosts) % 2; odd == 1 {
		suspects = append(suspects, opts.Hosts[len(opts.Hosts)-1])
	}
	switch {
	case s.stopped != "":
	case len(suspects) == 0:
	case len(good) == 0 && !slices.ContainsFunc(s.pairs, func(p Pair) bool { return p.Ran }):
		s.stopped = "no pair could run: " + s.pairs[0].Message
	case len(good) == 0:
		s.stopped = "no pair passed, so no node is known good to re-pair with: the fault may be the fabric (a spine, the subnet manager) rather than a node"
	default:
		s.repair(ctx, suspects, good)
	}
	return s.result(suspects)
}

type state struct {
	opts     Options
	pairs    []Pair
	rounds   int
	estimate time.Duration
	stopped  string
}

// round runs pairs in parallel, unless the budget cannot cover it.
func (s *state) round(ctx context.Context, pairs [][2]string) bool {
	if len(pairs) == 0 {
		return true
	}
	if s.stopped != "" {
		return false
	}
	if left := time.Until(s.opts.Deadline); !s.opts.Deadline.IsZero() && left < s.estimate {
		s.stopped = fmt.Sprintf("the tier's budget was spent: %s left, a round takes about %s; %d pair(s) not run", max(left, 0).Round(time.Second), s.estimate.Round(time.Second), len(pairs))
		return false
	}
	if ctx.Err() != nil {
		s.stopped = "interrupted: " + ctx.Err().Error()
		return false
	}
	s.rounds++
	rctx := ctx
	if !s.opts.Deadline.IsZero() {
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadline(ctx, s.opts.Deadline)
		defer cancel()
	}
	out := make([]Pair, len(pairs))
	g, gctx := errgroup.WithContext(rctx)
	for i, p := range pairs {
		g.Go(func() error {
			o := s.opts.Run(gctx, p)
			out[i] = Pair{Round: s.rounds, Hosts: p, Outcome: o}
			// A failed pair is an answer, not an error: the other pairs
			// of the round go on.
			return nil
		})
	}
	_ = g.Wait()
	for _, p := range out {
		s.estimate = max(s.estimate, p.Duration)
	}
	s.pairs = append(s.pairs, out...)
	switch {
	case ctx.Err() != nil:
		s.stopped = "interrupted: " + ctx.Err().Error()
	case rctx.Err() != nil:
		s.stopped = "the tier's budget was spent while a round ran"
	}
	return true
}

// markSlow marks passing pairs more than the margin below the median
// busbw of the pairs that measured one.
func (s *state) markSlow() {
	var vs []outlier.Value
	for _, p := range s.pairs {
		if p.Ran && p.BusBW > 0 {
			vs = append(vs, outlier.Value{Host: "pairs", Metric: "busbw", V: p.BusBW, HigherIsBetter: true})
		}
	}
	if len(vs) < outlier.MinPeers {
		return
	}
	for _, f := range outlier.Flag(vs, s.opts.Margin) {
		for i := range s.pairs {
			if p := &s.pairs[i]; p.Ran && p.Pass && p.BusBW == f.V {
				p.Slow = true
			}
		}
	}
}

// classify splits the nodes of the pairs run so far into known good (in
// a passing, not slow pair) and suspects (in a failing or slow pair, or in
// a pair that did not run).
func (s *state) classify() (good, suspects []string) {
	s.markSlow()
	seen := map[string]bool{}
	for _, p := range s.pairs {
		ok := p.Ran && p.Pass && !p.Slow
		for _, h := range p.Hosts {
			if seen[h] {
				continue
			}
			seen[h] = true
			if ok {
				good = append(good, h)
			} else {
				suspects = append(suspects, h)
			}
		}
	}
	return good, suspects
}

// met reports whether a and b were already paired.
func (s *state) met(a, b string) bool {
	for _, p := range s.pairs {
		if (p.Hosts[0] == a && p.Hosts[1] == b) || (p.Hosts[0] == b && p.Hosts[1] == a) {
			return true
		}
	}
	return false
}

// repair pairs every suspect with a known-good node it has not met, in
// rounds where no node is in two pairs.
func (s *state) repair(ctx context.Context, suspects, good []string) {
	todo := slices.Clone(suspects)
	for len(todo) > 0 {
		busy := map[string]bool{}
		var pairs [][2]string
		var later []string
		for _, x := range todo {
			partner := ""
			for _, g := range good {
				if !busy[g] && g != x && !s.met(x, g) {
					partner = g
					break
				}
			}
			if partner == "" {
				if !slices.ContainsFunc(good, func(g string) bool { return g != x && !s.met(x, g) }) {
					// Every good node met x already: nothing new to learn.
					continue
				}
				later = append(later, x)
				continue
			}
			busy[partner], busy[x] = true, true
			pairs = append(pairs, [2]string{x, partner})
		}
		if !s.round(ctx, pairs) {
			return
		}
		todo = later
	}
}

// result decides each suspect from the pairs it was in.
func (s *state) result(suspects []string) Result {
	s.markSlow()
	r := Result{Pairs: s.pairs, Culprits: []Named{}}
	if r.Pairs == nil {
		r.Pairs = []Pair{}
	}
	goodWithOther := func(partner, not string) bool {
		for _, p := range s.pairs {
			if p.Ran && p.Pass && (p.Hosts[0] == partner || p.Hosts[1] == partner) && p.Hosts[0] != not && p.Hosts[1] != not {
				return true
			}
		}
		return false
	}
	var undecided []string
	for _, x := range suspects {
		var partners []string
		// Named: failed with every partner, and at least one partner
		// passed with another node, so the failures follow this node.
		failedAll, ran, provenPartner := true, 0, false
		for _, p := range s.pairs {
			if p.Hosts[0] != x && p.Hosts[1] != x {
				continue
			}
			other := p.Hosts[0]
			if other == x {
				other = p.Hosts[1]
			}
			if !p.Ran {
				continue
			}
			ran++
			partners = append(partners, other)
			if p.Pass {
				failedAll = false
			}
			if goodWithOther(other, x) {
				provenPartner = true
			}
		}
		switch {
		case ran > 0 && failedAll && provenPartner:
			r.Culprits = append(r.Culprits, Named{Host: x, Partners: partners, Reason: fmt.Sprintf("failed with every partner (%s), each of which passed with another node", spelling.Hosts(partners))})
		case ran > 0 && !failedAll:
			// Cleared: it passed with someone.
		default:
			undecided = append(undecided, x)
		}
	}
	var vals []outlier.Pair
	for _, p := range s.pairs {
		if p.Ran && p.BusBW > 0 {
			vals = append(vals, outlier.Pair{Hosts: p.Hosts, V: p.BusBW})
		}
	}
	for _, st := range outlier.Stragglers(vals, s.opts.Margin) {
		if !slices.ContainsFunc(r.Culprits, func(n Named) bool { return n.Host == st.Host }) {
			r.Stragglers = append(r.Stragglers, st)
		}
	}
	slices.SortFunc(r.Culprits, func(a, b Named) int { return cmp.Compare(a.Host, b.Host) })
	slices.Sort(undecided)
	undecided = slices.Compact(undecided)
	switch {
	case s.stopped != "":
		r.Incomplete = s.stopped
	case len(undecided) > 0:
		r.Incomplete = fmt.Sprintf("%s could not be decided: no partner known good ran with them", strings.Join(undecided, ", "))
	}
	if s.stopped != "" && len(undecided) > 0 {
		r.Incomplete += fmt.Sprintf("; undecided: %s", strings.Join(undecided, ", "))
	}
	r.Complete = r.Incomplete == ""
	return r
}
