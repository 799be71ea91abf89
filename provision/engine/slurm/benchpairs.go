package slurm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/target"
)

// The bounds of the node-to-node NIC pairs.
const (
	// nicsTimeout bounds the step that lists every node's NICs.
	nicsTimeout = time.Minute
	// pairTimeout bounds one end's step: ib_write_bw's minute and its
	// kill (timeout -k 5 60), the client's second, and stepMargin.
	pairTimeout = 66*time.Second + stepMargin
	// pairsBudget bounds every round of pairs together; a pair that
	// has not run by then is not measured.
	pairsBudget = 15 * time.Minute
)

// nodeToNode runs the node-to-node NIC pairs bench.Run runs over SSH, as
// srun steps inside the job: one step lists every node's NICs (bench
// -engine-nics), then each round's pairs run at once (bench.
// NodeToNodeRounds), each pair a server step on one node and, a second
// later, a client step on the other (bench -engine-pair), each end's
// output read back bounded as every step's is. A pair that could not
// run is filed with why (not measured, never passed), a -deadline or the
// pairs' budget ending before it included. unlisted are the hosts whose
// NICs the listing did not bring back, and why.
func (e *Engine) nodeToNode(ctx context.Context, job string, members []member, bin, bundle string) (remote map[string]map[string]bench.RemoteNIC, unlisted []target.Host, why string) {
	remote = map[string]map[string]bench.RemoteNIC{}
	byNode := map[string]target.Host{}
	node := map[string]string{}
	var targets []target.Host
	var inBlocks []member
	for _, m := range members {
		// Only hosts of a node block of two or more can be paired.
		if m.tg.Node != nil && len(m.tg.Node.Hosts) >= 2 {
			inBlocks = append(inBlocks, m)
		}
		byNode[m.node] = m.tg
		node[m.tg.Host.Name] = m.node
		targets = append(targets, m.tg)
	}
	if len(inBlocks) < 2 {
		return remote, nil, ""
	}
	lctx, cancel := context.WithTimeout(ctx, nicsTimeout+stepMargin)
	reports, problems, stepErr, _ := e.step(lctx, ctx, job, strings.Join(nodeNames(inBlocks), ","), len(inBlocks), bin, "bench", "-engine-node", bundle, "-engine-nics")
	cancel()
	nics := map[string][]bench.NIC{}
	var silent []string
	for _, m := range inBlocks {
		rep, ok := reports[m.node]
		if ok && rep.NICs != nil {
			nics[m.tg.Host.Name] = *rep.NICs
			continue
		}
		unlisted = append(unlisted, m.tg)
		w := problems[m.node]
		switch {
		case ok && rep.Error != "":
			w = rep.Error
		case w == "":
			w = "it sent nothing"
		}
		silent = append(silent, m.node+": "+w)
	}
	if len(silent) > 0 {
		sort.Strings(silent)
		why = "the srun step that lists each node's NICs for the node-to-node pairs got none from " + strings.Join(silent, "; ")
		if l := lastLines(stepErr, 3); l != "" {
			why += " (" + l + ")"
		}
	}

	rounds := bench.NodeToNodeRounds(targets, nics)
	pctx, cancel := context.WithTimeout(ctx, pairsBudget)
	defer cancel()
	var mu sync.Mutex
	for _, round := range rounds {
		if pctx.Err() != nil {
			w := fmt.Sprintf("the node-to-node pairs' %s ran out before this pair ran; not measured", pairsBudget)
			if ctx.Err() != nil {
				w = "the -deadline ended before this pair ran; not measured"
			}
			for _, p := range round {
				bench.RecordPair(remote, p, 0, w)
			}
			continue
		}
		var wg sync.WaitGroup
		for _, p := range round {
			wg.Add(1)
			go func() {
				defer wg.Done()
				gbps, w := e.runPair(pctx, job, node, bin, bundle, p)
				mu.Lock()
				bench.RecordPair(remote, p, gbps, w)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	return remote, unlisted, why
}

// runPair runs one pair: the server's step on its node, the client's on
// its own, the client dialling the server's Slurm node name (the name
// the cluster resolves). It returns the client's bandwidth, or why there
// is none, naming the pair and the node whose step failed.
func (e *Engine) runPair(ctx context.Context, job string, node map[string]string, bin, bundle string, p bench.NodePair) (float64, string) {
	sn, cn := node[p.Server.Host.Name], node[p.Client.Host.Name]
	lctx, cancel := context.WithTimeout(ctx, pairTimeout)
	defer cancel()
	// The server's step ends when its client is served, or is ended
	// when the client's step failed: nothing will come to it.
	sctx, stopServer := context.WithCancel(lctx)
	defer stopServer()
	port := fmt.Sprint(p.Port)
	var srv pairResult
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv = e.pairStep(sctx, job, sn, bin, bundle, "-engine-pair", "server", "-engine-pair-nic", p.ServerNIC, "-engine-pair-port", port)
	}()
	cli := e.pairStep(lctx, job, cn, bin, bundle, "-engine-pair", "client", "-engine-pair-nic", p.ClientNIC, "-engine-pair-port", port, "-engine-pair-server", sn)
	if cli.err != nil {
		stopServer()
	}
	<-done
	name := fmt.Sprintf("%s %s → %s %s", sn, p.ServerNIC, cn, p.ClientNIC)
	switch {
	case ctx.Err() != nil && cli.err != nil:
		return 0, name + ": the -deadline ended the pair before it finished; not measured"
	case cli.err != nil:
		return 0, name + ": " + cli.err.Error()
	case srv.err != nil && !errors.Is(sctx.Err(), context.Canceled):
		return 0, name + ": " + srv.err.Error()
	}
	return cli.end.GBps, ""
}

// pairResult is what one end's step brought back.
type pairResult struct {
	end PairEnd
	err error
}

// pairStep runs bench -engine-node … args on the Slurm node n as a step
// of one task and reads its end back; err names the node and what srun
// said when it sent no usable result.
func (e *Engine) pairStep(ctx context.Context, job, n, bin, bundle string, args ...string) pairResult {
	reports, problems, stepErr, _ := e.step(ctx, ctx, job, n, 1, bin, append([]string{"bench", "-engine-node", bundle}, args...)...)
	rep, ok := reports[n]
	switch {
	case ok && rep.Pair != nil && rep.Pair.Why == "":
		return pairResult{end: *rep.Pair}
	case ok && rep.Pair != nil:
		return pairResult{err: fmt.Errorf("%s", rep.Pair.Why)}
	case ok && rep.Error != "":
		return pairResult{err: fmt.Errorf("the Slurm node %s could not run its end: %s", n, rep.Error)}
	}
	why := problems[n]
	if why == "" {
		why = "it sent no result"
	}
	if l := lastLines(stepErr, 3); l != "" {
		why += " (" + l + ")"
	}
	return pairResult{err: fmt.Errorf("the Slurm node %s (job %s): %s", n, job, why)}
}
