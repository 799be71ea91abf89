package slurm

import (
	"time"

	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

// The bounds of the run's Slurm commands that are not a tier's budget;
// the allocation's time limit adds them up.
const (
	// sbcastTimeout bounds one sbcast (the binary, a bundle).
	sbcastTimeout = 5 * time.Minute
	// cleanupTimeout bounds the last step, which removes sbcast's files.
	cleanupTimeout = 30 * time.Second
	// limitMargin is the allocation's time beyond the longest the run
	// can take: the binary's start on the nodes, the controller's work
	// between steps.
	limitMargin = time.Minute
)

// verifyTimeLimit is the longest a verify of targets can hold its
// allocation: the two sbcasts, the node step (the host budget plus
// stepMargin), at the fleet tier each node block's multi-node tests one
// after another (each a group run and its isolation, which ends within
// the larger of the test's timeout and the host budget, plus stepMargin
// for the last step), the cleanup step, and limitMargin. It is the
// allocation's time limit (salloc -t), so a gpuform killed before it can
// cancel its job does not leave the nodes held until the partition's
// limit.
func verifyTimeLimit(targets []target.Host, ro runner.Options) time.Duration {
	budget := ro.Budget
	if budget == 0 {
		budget = ro.Tier.Budget()
	}
	d := 2*sbcastTimeout + budget + stepMargin + cleanupTimeout + limitMargin
	if !ro.Tier.Includes(verify.TierFleet) {
		return d
	}
	for _, n := range nodeBlocks(targets) {
		for _, nt := range verify.ExpectationFor(n).NCCL {
			if nt.MultiNode {
				d += max(nt.Timeout, budget) + stepMargin
			}
		}
	}
	return d
}

// benchTimeLimit is verifyTimeLimit for bench: three sbcasts (the
// binary, the bundle, the bundle with the groups' runs), each node
// block's multi-node all_reduce (its timeout plus stepMargin), the node
// step (budget, the longest host's, plus stepMargin), the cleanup step
// and limitMargin; with pairs (the network layer) and a node block of two
// or more hosts, the node-to-node NIC pairs too: the step listing the
// NICs and the pairs' budget.
func benchTimeLimit(targets []target.Host, budget time.Duration, pairs bool) time.Duration {
	d := 3*sbcastTimeout + budget + stepMargin + cleanupTimeout + limitMargin
	paired := false
	for _, n := range nodeBlocks(targets) {
		if len(n.Hosts) < 2 {
			continue
		}
		if pairs && !paired {
			paired = true
			d += nicsTimeout + stepMargin + pairsBudget
		}
		// bench runs one multi-node all_reduce a group at most.
		var longest time.Duration
		for _, nt := range verify.ExpectationFor(n).NCCL {
			if nt.MultiNode {
				longest = max(longest, bench.GroupTimeout(nt))
			}
		}
		if longest > 0 {
			d += longest + stepMargin
		}
	}
	return d
}

// benchBudget is the bench step's limit: the longest host budget, as
// bench gives each host.
func benchBudget(targets []target.Host, bo bench.Options) time.Duration {
	if bo.Budget != 0 {
		return bo.Budget
	}
	budget := bench.DefaultBudget
	for _, tg := range targets {
		if n := tg.Node; n != nil && n.Bench != nil && n.Bench.Timeout.Set {
			budget = max(budget, n.Bench.Timeout.V)
		}
	}
	return budget
}

// nodeBlocks is the targets' node blocks, each once, in order.
func nodeBlocks(targets []target.Host) []*spec.Node {
	seen := map[*spec.Node]bool{}
	var out []*spec.Node
	for _, tg := range targets {
		if tg.Node != nil && !seen[tg.Node] {
			seen[tg.Node] = true
			out = append(out, tg.Node)
		}
	}
	return out
}

// allocationMinutes is salloc's -t for a run that can take limit: whole
// minutes, rounded up.
func allocationMinutes(limit time.Duration) int {
	return int((limit + time.Minute - 1) / time.Minute)
}
