package bench

import (
	"context"

	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/spec"
)

// What an engine that benches each node on its own (provision/engine/
// slurm) needs to run the node-to-node NIC pairs Run makes over SSH: each
// node's NICs (NodeNICs, on the node), the pairs in rounds
// (NodeToNodeRounds), each end run on its node (PairServer, PairClient),
// the results on both ends (RecordPair), which the nodes are then judged
// on (Options.Remote).

// NodeNICs is, on the node itself, tg's active NICs when it has
// ib_write_bw (what Run probes each host of a node block for).
func NodeNICs(ctx context.Context, tg target.Host, o Options) ([]NIC, bool) {
	return probeNICs(ctx, o, tg)
}

// NodePair is one node-to-node ib_write_bw run: the server on
// ServerNIC of Server, the client on ClientNIC (the same rail) of Client,
// meeting at TCP port Port.
type NodePair struct {
	Server, Client       target.Host
	ServerNIC, ClientNIC string
	Port                 int
}

// NodeToNodeRounds pairs the hosts of every node block as Run does (two
// or more hosts with NICs, in order, NIC i with NIC i of the same link
// layer; nics are the hosts' NodeNICs by spec host name). Round k holds
// the k-th run of every pair of hosts: no host is in two runs of a round,
// so an engine can run a round's pairs at once, and a pair of hosts still
// runs its rails one at a time, as Run runs them.
func NodeToNodeRounds(targets []target.Host, nics map[string][]NIC) [][]NodePair {
	var order []*spec.Node
	ends := map[*spec.Node][]crossEnd{}
	for _, t := range targets {
		n, ok := nics[t.Host.Name]
		if t.Node == nil || len(t.Node.Hosts) < 2 || !ok || len(n) == 0 {
			continue
		}
		if _, seen := ends[t.Node]; !seen {
			order = append(order, t.Node)
		}
		ends[t.Node] = append(ends[t.Node], crossEnd{tg: t, nics: n})
	}
	var rounds [][]NodePair
	for _, n := range order {
		if len(ends[n]) < 2 {
			continue
		}
		runs, _ := crossPairs(ends[n])
		k := map[string]int{}
		for _, r := range runs {
			i := k[r.server.Host.Name]
			k[r.server.Host.Name]++
			for len(rounds) <= i {
				rounds = append(rounds, nil)
			}
			rounds[i] = append(rounds[i], NodePair{Server: r.server, Client: r.client, ServerNIC: r.serverNIC.Name, ClientNIC: r.clientNIC.Name, Port: r.port})
		}
	}
	return rounds
}

// RecordPair files one run's result on both its ends, as Run does:
// gbps the client's bandwidth, or why there is none.
func RecordPair(out map[string]map[string]RemoteNIC, p NodePair, gbps float64, why string) {
	put := func(host, nic string, r RemoteNIC) {
		if out[host] == nil {
			out[host] = map[string]RemoteNIC{}
		}
		out[host][nic] = r
	}
	put(p.Server.Host.Name, p.ServerNIC, RemoteNIC{Peer: p.Client.Host.Name, PeerNIC: p.ClientNIC, GBps: gbps, Why: why})
	put(p.Client.Host.Name, p.ClientNIC, RemoteNIC{Peer: p.Server.Host.Name, PeerNIC: p.ServerNIC, GBps: gbps, Why: why})
}
