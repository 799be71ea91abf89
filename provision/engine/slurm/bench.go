package slurm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/target"
)

// Bench runs bench on every host's node at once, as Verify runs verify:
// the same placement (allocation or job), sbcast of the binary and the
// bundle, and one srun step of gpuform bench -engine-node on every node,
// each benching itself (bench.RunNode); the results are merged
// (bench.Merge), peers compared across the run. Each group's multi-node
// all_reduce runs first, as an srun step from its first node, and every
// host of the group is judged on it. Then the node-to-node NIC pairs, as
// srun steps (nodeToNode), each host judged on its runs as over SSH.
func (e *Engine) Bench(ctx context.Context, targets []target.Host, bo bench.Options) (*bench.Report, error) {
	if !e.o.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, e.o.Deadline)
		defer cancel()
	}
	job, members, hostErr, release, err := e.place(ctx, targets, benchTimeLimit(targets, benchBudget(targets, bo), len(bo.Layers) == 0 || slices.Contains(bo.Layers, bench.LayerNetwork)))
	if err != nil {
		return nil, err
	}
	defer release()
	results := map[string]bench.NodeResult{}
	missing := map[string]error{}
	for name, err := range hostErr {
		missing[name] = err
	}
	var runTargets []target.Host
	in := map[string]bool{}
	for _, m := range members {
		in[m.tg.Host.Name] = true
	}
	for _, tg := range targets {
		if in[tg.Host.Name] || hostErr[tg.Host.Name] != nil {
			runTargets = append(runTargets, tg)
		}
	}
	if len(members) > 0 {
		// Hosts whose NICs the pairs' listing did not bring back, and
		// whose bench measured them, are marked as not paired: a bench
		// that did not measure the pairs must not read as one that had
		// none to measure.
		if unlisted, why := e.benchStep(ctx, job, members, bo, results, missing); len(unlisted) > 0 {
			bench.NodeToNodeNotRun(unlisted, results, why)
		}
	}
	return bench.Merge(runTargets, bo, results, missing), nil
}

// benchStep sends the binary and the bundle and runs the bench step.
func (e *Engine) benchStep(ctx context.Context, job string, members []member, bo bench.Options, results map[string]bench.NodeResult, missing map[string]error) (unlisted []target.Host, unlistedWhy string) {
	failAll := func(err error) {
		for _, m := range members {
			missing[m.tg.Host.Name] = err
		}
	}
	bnodes := map[string]BundleNode{}
	for _, m := range members {
		bnodes[m.node] = BundleNode{Host: m.tg.Host.Name, Node: m.tg.Node.Name}
	}
	b, err := e.bundle(bnodes)
	if err != nil {
		failAll(fmt.Errorf("cannot bundle the spec for the nodes: %w", err))
		return nil, ""
	}
	b.Bench = &BenchRun{Layers: bo.Layers, Budget: bo.Budget}
	local, err := os.MkdirTemp("", "gpuform-slurm")
	if err != nil {
		failAll(err)
		return nil, ""
	}
	defer os.RemoveAll(local)
	bundlePath := filepath.Join(local, "bundle.json")
	if err := b.Write(bundlePath); err != nil {
		failAll(err)
		return nil, ""
	}
	base, destBin, destBundle, sbcastErr := e.send(ctx, job, bundlePath)
	nodes := strings.Join(nodeNames(members), ",")
	defer e.cleanup(job, nodes, len(members), destBin, destBundle, base+"-bundle-groups.json")

	// Each group's multi-node all_reduce, as Run makes it before the
	// hosts' own bench: an srun step from the group's first node (its
	// gpuform launching the spec's command there, as verify's fleet tier
	// does); the results travel to the nodes in a second bundle, each
	// host judged on its group's.
	if sbcastErr == nil && ctx.Err() == nil {
		node := map[string]string{}
		targets := make([]target.Host, len(members))
		for i, m := range members {
			node[m.tg.Host.Name] = m.node
			targets[i] = m.tg
		}
		mo := bo
		mo.Launch = e.launcher(job, node, destBin, destBundle)
		mo.LaunchNames = func(_ context.Context, group []target.Host) map[string]string {
			out := map[string]string{}
			for _, h := range group {
				out[h.Host.Name] = node[h.Host.Name]
			}
			return out
		}
		// The command runs on the Slurm node, never on this machine.
		mo.AllowLocal = true
		if groups := bench.RunMultiNode(ctx, targets, mo); len(groups) > 0 {
			b.Bench.Groups = map[string]bench.GroupRun{}
			for h, g := range groups {
				b.Bench.Groups[h] = *g
			}
		}
		// The node-to-node NIC pairs, after the groups' run as Run
		// makes them.
		if len(bo.Layers) == 0 || slices.Contains(bo.Layers, bench.LayerNetwork) {
			var remote map[string]map[string]bench.RemoteNIC
			remote, unlisted, unlistedWhy = e.nodeToNode(ctx, job, members, destBin, destBundle)
			if len(remote) > 0 {
				b.Bench.Remote = remote
			}
		}
		if b.Bench.Groups != nil || b.Bench.Remote != nil {
			destBundle = base + "-bundle-groups.json"
			if err := b.Write(bundlePath); err != nil {
				failAll(err)
				return nil, ""
			}
			if err := e.sbcast(ctx, job, bundlePath, destBundle); err != nil {
				sbcastErr = fmt.Errorf("sbcast of the bundle with the groups' multi-node runs and the node-to-node pairs failed: %w", err)
			}
		}
	}

	// The step's limit is the longest host budget, as bench gives each.
	targets := make([]target.Host, len(members))
	for i, m := range members {
		targets[i] = m.tg
	}
	budget := benchBudget(targets, bo)
	sctx, cancel := context.WithTimeout(ctx, budget+stepMargin)
	defer cancel()
	reports, problems, stepErr, beforeCut := e.step(sctx, ctx, job, nodes, len(members), destBin, "bench", "-engine-node", destBundle)
	cut := !e.o.Deadline.IsZero() && ctx.Err() != nil
	f := stepFailure{job: job, stderr: stepErr, beforeCut: beforeCut, cut: cut, sbcastErr: sbcastErr, problems: problems, nodes: len(members)}
	for _, m := range members {
		name := m.tg.Host.Name
		rep, ok := reports[m.node]
		switch {
		case ok && rep.Bench != nil:
			r := *rep.Bench
			r.Host.Host = name
			for i := range r.Peers {
				r.Peers[i].Host = name
			}
			results[name] = r
		case ok && rep.Error != "":
			missing[name] = fmt.Errorf("bench could not run on Slurm node %s: %s", m.node, rep.Error)
		default:
			err, notRun := f.why(m.node)
			if notRun {
				err = fmt.Errorf("the -deadline ended before Slurm node %s's bench finished; not measured", m.node)
			}
			missing[name] = err
		}
	}
	return unlisted, unlistedWhy
}
