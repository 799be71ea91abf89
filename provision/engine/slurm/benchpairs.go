package slurm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
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
// NodeToNodeRounds), a round's server ends as one step and its client
// ends as another (runRound), so the controller runs two steps a round
// whatever the fleet's size, each end's result read back bounded as
// every step's is. A pair that could not
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
		gbps, whys := e.runRound(pctx, job, node, bin, bundle, round)
		for i, p := range round {
			bench.RecordPair(remote, p, gbps[i], whys[i])
		}
	}
	return remote, unlisted, why
}

// runRound runs one round of pairs as two srun steps, whatever their
// number: every server end in one step on the servers' nodes, and a
// second later (PairClient waits it) every client end in one on the
// clients' nodes, each task finding its own end in the round's
// description (PairRound). The clients dial their server's Slurm node
// name (the name the cluster resolves). Once every client has ended, a
// server still waiting has lost its client: its step is ended after a
// few seconds. It returns each pair's bandwidth, or why there is none,
// naming the pair and the node whose end failed.
func (e *Engine) runRound(ctx context.Context, job string, node map[string]string, bin, bundle string, round []bench.NodePair) ([]float64, []string) {
	ends := map[string]RoundEnd{}
	var servers, clients []string
	for _, p := range round {
		sn, cn := node[p.Server.Host.Name], node[p.Client.Host.Name]
		ends[sn] = RoundEnd{NIC: p.ServerNIC, Port: p.Port}
		ends[cn] = RoundEnd{NIC: p.ClientNIC, Port: p.Port, Server: sn}
		servers, clients = append(servers, sn), append(clients, cn)
	}
	gbps, whys := make([]float64, len(round)), make([]string, len(round))
	spec, err := FormatPairRound(ends)
	if err != nil {
		for i := range round {
			whys[i] = err.Error()
		}
		return gbps, whys
	}
	lctx, cancel := context.WithTimeout(ctx, pairTimeout)
	defer cancel()
	sctx, stopServers := context.WithCancel(lctx)
	defer stopServers()
	args := []string{"bench", "-engine-node", bundle, "-engine-pair", spec}
	var srv stepOut
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.reports, srv.problems, srv.stderr, _ = e.step(sctx, sctx, job, strings.Join(servers, ","), len(servers), bin, args...)
	}()
	var cli stepOut
	cli.reports, cli.problems, cli.stderr, _ = e.step(lctx, lctx, job, strings.Join(clients, ","), len(clients), bin, args...)
	stop := time.AfterFunc(serverGrace, stopServers)
	<-done
	stop.Stop()
	for i, p := range round {
		sn, cn := node[p.Server.Host.Name], node[p.Client.Host.Name]
		name := fmt.Sprintf("%s %s → %s %s", sn, p.ServerNIC, cn, p.ClientNIC)
		end, err := cli.end(job, cn, len(clients))
		switch {
		case err != nil && ctx.Err() != nil:
			whys[i] = name + ": the -deadline ended the pair before it finished; not measured"
		case err != nil:
			whys[i] = name + ": " + err.Error()
		default:
			gbps[i] = end.GBps
		}
	}
	return gbps, whys
}

// serverGrace is how long a round's server step may go on after every
// client has ended (a served server exits at once).
const serverGrace = 5 * time.Second

// stepOut is what a round's step brought back.
type stepOut struct {
	reports  map[string]NodeReport
	problems map[string]string
	stderr   string
}

// end is node n's end of the round, or why it sent none, naming the node
// and what srun said of it.
func (o stepOut) end(job, n string, tasks int) (PairEnd, error) {
	rep, ok := o.reports[n]
	switch {
	case ok && rep.Pair != nil && rep.Pair.Why == "":
		return *rep.Pair, nil
	case ok && rep.Pair != nil:
		return PairEnd{}, errors.New(rep.Pair.Why)
	case ok && rep.Error != "":
		return PairEnd{}, fmt.Errorf("the Slurm node %s could not run its end: %s", n, rep.Error)
	}
	why := o.problems[n]
	if why == "" {
		why = "it sent no result"
	}
	named := linesNaming(o.stderr, n)
	if named == "" && tasks == 1 {
		named = lastLines(o.stderr, 3)
	}
	if named != "" {
		why += " (" + named + ")"
	}
	return PairEnd{}, fmt.Errorf("the Slurm node %s (job %s): %s", n, job, why)
}

// RoundEnd is one node's end of a round's run: the server end on NIC at
// Port (Server ""), or the client end dialling Server.
type RoundEnd struct {
	NIC    string
	Port   int
	Server string
}

// FormatPairRound is a round's ends as one argument of the steps
// (-engine-pair): NODE:NIC:PORT for a server, NODE:NIC:PORT:SERVER for a
// client, comma-separated in node order.
func FormatPairRound(ends map[string]RoundEnd) (string, error) {
	nodes := make([]string, 0, len(ends))
	for n := range ends {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	parts := make([]string, 0, len(nodes))
	for _, n := range nodes {
		e := ends[n]
		for _, f := range []string{n, e.NIC, e.Server} {
			if strings.ContainsAny(f, ":, \t\n") {
				return "", fmt.Errorf("%q cannot travel in a round of pairs", f)
			}
		}
		p := fmt.Sprintf("%s:%s:%d", n, e.NIC, e.Port)
		if e.Server != "" {
			p += ":" + e.Server
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ","), nil
}

// ParsePairRound reads FormatPairRound's argument back, by node.
func ParsePairRound(s string) (map[string]RoundEnd, error) {
	out := map[string]RoundEnd{}
	for _, p := range strings.Split(s, ",") {
		f := strings.Split(p, ":")
		if len(f) < 3 || len(f) > 4 || f[0] == "" || f[1] == "" {
			return nil, fmt.Errorf("-engine-pair: %q is not NODE:NIC:PORT[:SERVER]", p)
		}
		port, err := strconv.Atoi(f[2])
		if err != nil || port <= 0 || port > 65535 {
			return nil, fmt.Errorf("-engine-pair: %q has no TCP port", p)
		}
		e := RoundEnd{NIC: f[1], Port: port}
		if len(f) == 4 {
			if f[3] == "" {
				return nil, fmt.Errorf("-engine-pair: %q names no server", p)
			}
			e.Server = f[3]
		}
		out[f[0]] = e
	}
	return out, nil
}
