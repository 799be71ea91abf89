package health

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gpuform/gpuform/provision/slurm"
)

// ReasonPrefix starts every drain reason health mode sets. Health mode
// lifts only drains with this prefix: apply's ("gpuform: apply …"), an
// admin's, NHC's and Slurm's own (DOWN, "Not responding") are not its own.
// Apply leaves these drains alone as it does an admin's
// (slurm.Node.Own).
const ReasonPrefix = slurm.HealthReasonPrefix

// CommentPrefix starts the node Comment= health mode sets when the
// circuit breaker kept it from draining a failing node; health mode
// clears only a comment with this prefix.
const CommentPrefix = ReasonPrefix + "circuit breaker open: "

// Reason is the drain reason for text (a Decision's Reason): health
// mode's prefix, one line, cut to fit Slurm's reason column.
func Reason(text string) string { return slurm.Reason("health: " + text) }

// Owns reports whether n is out of service by a drain of health mode's.
func Owns(n slurm.Node) bool {
	return n.OutOfService() && strings.HasPrefix(n.Reason, ReasonPrefix)
}

// Limit is how many nodes of a fleet of size health mode may hold
// drained: max_drained_share of it, rounded down (a fleet of 20 at 0.1
// allows 2; a fleet of 5 at 0.1 allows none).
func Limit(size int, share float64) int {
	// The epsilon keeps 0.3 × 10 at 3 despite floating point.
	return int(math.Floor(share*float64(size) + 1e-9))
}

// Admission is the circuit breaker's verdict on this node's drain.
type Admission struct {
	// Keep is true when the node's drain is among the first Limit of the
	// fleet's health-mode drains.
	Keep bool
	// Lost is true when the node no longer carries a drain of health
	// mode's (someone else drained, resumed or changed it meanwhile).
	Lost bool
	// Fleet is the number of the fleet's nodes Slurm knows.
	Fleet int
	// Limit is how many of them health mode may hold drained.
	Limit int
	// Ahead are the fleet's other health-mode drains ordered before this
	// node's (all of them for Held).
	Ahead []string
}

// inFleet returns the Slurm nodes that are the spec's GPU fleet (names),
// self always among them, in Slurm's order.
func inFleet(self string, nodes []slurm.Node, names map[string]bool) []slurm.Node {
	var out []slurm.Node
	for _, n := range nodes {
		if n.Name == self || names[n.Name] {
			out = append(out, n)
		}
	}
	return out
}

// Held is the breaker before a drain: the fleet's nodes health mode holds
// drained now. When there are already Limit of them (Keep false), a new
// drain would be undone at once, so none is made.
func Held(self string, nodes []slurm.Node, names map[string]bool, p Policy) Admission {
	fleet := inFleet(self, nodes, names)
	a := Admission{Fleet: len(fleet), Limit: Limit(len(fleet), p.MaxDrainedShare)}
	for _, n := range fleet {
		if n.Name != self && Owns(n) {
			a.Ahead = append(a.Ahead, n.Name)
		}
	}
	a.Keep = len(a.Ahead) < a.Limit
	return a
}

// Admit is the breaker after this node drained itself and waited until
// every drain Slurm stamped no later than its own is visible (see README
// "Circuit breaker"): the node keeps its drain only when fewer than Limit
// of the fleet's health-mode drains come before it in the order every
// node computes alike — the drain's time in Slurm, then the node name. A
// drain whose time is unreadable counts as the earliest.
func Admit(self string, nodes []slurm.Node, names map[string]bool, p Policy) Admission {
	fleet := inFleet(self, nodes, names)
	a := Admission{Fleet: len(fleet), Limit: Limit(len(fleet), p.MaxDrainedShare)}
	var me *slurm.Node
	var held []slurm.Node
	for i, n := range fleet {
		if !Owns(n) {
			continue
		}
		if n.Name == self {
			me = &fleet[i]
			continue
		}
		held = append(held, n)
	}
	if me == nil {
		a.Lost = true
		return a
	}
	before := func(x, y slurm.Node) bool {
		if !x.ReasonTime.Equal(y.ReasonTime) {
			return x.ReasonTime.Before(y.ReasonTime)
		}
		return x.Name < y.Name
	}
	sort.Slice(held, func(i, j int) bool { return before(held[i], held[j]) })
	for _, n := range held {
		if before(n, *me) {
			a.Ahead = append(a.Ahead, n.Name)
		}
	}
	a.Keep = len(a.Ahead) < a.Limit
	return a
}

// Open is the breaker's message when it holds a drain back.
func (a Admission) Open(p Policy) string {
	ahead := strings.Join(a.Ahead, ", ")
	if len(a.Ahead) > 5 {
		ahead = strings.Join(a.Ahead[:5], ", ") + fmt.Sprintf(" and %d more", len(a.Ahead)-5)
	}
	if ahead == "" {
		ahead = "none"
	}
	return fmt.Sprintf("health mode already holds %d of the fleet's %d GPU nodes drained (%s); health { max_drained_share = %g } allows %d: "+
		"this many failing at once points to a common cause (a driver rollout, the fabric, a faulty check) rather than one more broken node; "+
		"find it, resume the nodes that are fine (scontrol update NodeName=… State=RESUME) or raise max_drained_share",
		len(a.Ahead), a.Fleet, ahead, p.MaxDrainedShare, a.Limit)
}
