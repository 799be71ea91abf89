// Package engine is how verify reaches the nodes it checks. An engine
// takes the hosts of a spec and the runner's options and returns one
// merged report.Document, the same model every view renders (text, JSON,
// JUnit, Prometheus), whatever carried the checks to the nodes:
//
//   - ssh (provision/engine/ssh, the default) fans out from this machine
//     over SSH, one connection per host, -parallelism at a time: today's
//     provision/verify/runner, unchanged.
//   - slurm (provision/engine/slurm) lets the scheduler do the fan-out: it
//     allocates the hosts as Slurm nodes (or uses a job's), sends gpuform
//     and the spec to them with sbcast, runs verify --local on every node
//     at once as one srun step and merges the reports the step prints.
//   - kubernetes (provision/engine/kubernetes) runs a Job per node,
//     pinned with nodeName, from the image the spec names; each node's
//     report comes back in a ConfigMap its pod writes.
//
// What an engine must provide (ARCHITECTURE.md, "Engines: what an engine
// must provide", says it for a reader adding one, such as a Kubernetes
// engine of a Job per node): the node names the scheduler knows for the
// spec's hosts and the way back; the nodes' scope (a job, a deadline);
// the binary and the spec on every node without a shared filesystem; one
// launch of the node-side verify --local across all nodes; each node's
// report back, bounded in size and time, and a node that sent none named
// as a failed reachable check; and it must never report a check it did
// not see run as passed.
package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/provision/verify/runner"
)

// Engine runs verify over the hosts of a spec.
type Engine interface {
	// Name is the engine's -engine value.
	Name() string
	// Verify checks every target and returns the merged report. A host
	// the engine could not reach, launch on or hear back from is a failed
	// reachable check in the report, never an error: the rest of the
	// fleet is still reported. The error is for a run that could not
	// start at all (no allocation, a partition the user may not use).
	Verify(ctx context.Context, targets []target.Host, o runner.Options) (*report.Document, error)
	// Bench measures every target and returns the merged report, with
	// the same rule: a host it could not bench has Error set.
	Bench(ctx context.Context, targets []target.Host, o bench.Options) (*bench.Report, error)
}

// Names of the engines, SSH first: the default.
const (
	SSH        = "ssh"
	Slurm      = "slurm"
	Kubernetes = "kubernetes"
)

// Names lists the engines -engine takes.
func Names() []string { return []string{SSH, Slurm, Kubernetes} }

// Check returns an error naming the engines when name is not one.
func Check(name string) error {
	if slices.Contains(Names(), name) {
		return nil
	}
	n := Names()
	return fmt.Errorf("-engine must be %s or %s, not %q", strings.Join(n[:len(n)-1], ", "), n[len(n)-1], name)
}

// Naming is how a scheduler names the spec's hosts: NodeName gives a
// host's node (or why it has none); Scheduler ("Slurm"), Attr (the
// attribute NodeName reads, "slurm_node_name") and Fix (where a spec sets
// it, "rollout { slurm_node_name }") word the errors.
type Naming struct {
	NodeName  func(target.Host) (string, error)
	Scheduler string
	Attr      string
	Fix       string
}

// Placed is a target that takes part, under its scheduler node's name.
type Placed struct {
	Target target.Host
	Node   string
}

// Place names every target's node. A target without a name, or whose
// node another target already has (two spec hosts cannot be one node's
// run), does not take part: its error is in hostErr, by host name, for
// the report to show as that host's failed reachable check.
func Place(targets []target.Host, n Naming) (placed []Placed, hostErr map[string]error) {
	hostErr = map[string]error{}
	byNode := map[string]string{}
	for _, tg := range targets {
		name, err := n.NodeName(tg)
		switch {
		case err != nil:
			hostErr[tg.Host.Name] = fmt.Errorf("no %s node name for %s: %s %w", n.Scheduler, tg.Host.Name, n.Attr, err)
		case byNode[name] != "":
			hostErr[tg.Host.Name] = fmt.Errorf("spec hosts %s and %s are both %s node %s; set %s so each host has its own", byNode[name], tg.Host.Name, n.Scheduler, name, n.Fix)
		default:
			byNode[name] = tg.Host.Name
			placed = append(placed, Placed{Target: tg, Node: name})
		}
	}
	return placed, hostErr
}
