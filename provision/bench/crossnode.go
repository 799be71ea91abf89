package bench

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/gpuform/gpuform/provision/bench/tool"
	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// RemoteNIC is one NIC's RDMA write bandwidth to the same rail of another
// node of its group.
type RemoteNIC struct {
	// Peer is the other host and PeerNIC its NIC.
	Peer, PeerNIC string
	// GBps is the bandwidth measured; 0 when Why says why not.
	GBps float64
	// Why is why the run gave no figure.
	Why string
}

// crossEnd is one host of a node-to-node pair as the pairing needs it.
type crossEnd struct {
	tg   target.Host
	nics []NIC
}

// crossRun is one ib_write_bw run between two nodes: the server on
// server's NIC, the client on client's NIC of the same rail.
type crossRun struct {
	server, client       target.Host
	serverNIC, clientNIC NIC
	port                 int
}

// crossPairs pairs the hosts of a group in order (first with second,
// third with fourth, …; an odd last host is left out) and, in each pair,
// NIC i of one link layer with NIC i of the other (the same rail: NICs
// are sorted by name, as NewHostInfo sorts them).
func crossPairs(hosts []crossEnd) (runs []crossRun, unpaired []string) {
	port := 18600
	for i := 0; i+1 < len(hosts); i += 2 {
		a, b := hosts[i], hosts[i+1]
		byLayer := func(nics []NIC) map[string][]NIC {
			m := map[string][]NIC{}
			for _, n := range nics {
				m[n.LinkLayer] = append(m[n.LinkLayer], n)
			}
			return m
		}
		bl := byLayer(b.nics)
		seen := map[string]int{}
		for _, n := range a.nics {
			k := seen[n.LinkLayer]
			seen[n.LinkLayer]++
			if k >= len(bl[n.LinkLayer]) {
				continue
			}
			port++
			runs = append(runs, crossRun{server: a.tg, client: b.tg, serverNIC: n, clientNIC: bl[n.LinkLayer][k], port: port})
		}
	}
	if len(hosts)%2 == 1 {
		unpaired = append(unpaired, hosts[len(hosts)-1].tg.Host.Name)
	}
	return runs, unpaired
}

// pairRunner runs one crossRun and returns the client's bandwidth in
// GB/s, or why there is none; err only when ctx ends or a host cannot be
// reached.
type pairRunner func(ctx context.Context, r crossRun) (gbps float64, why string, err error)

// runCrossNode runs every pair's runs one at a time (two runs at once
// would share a switch and a NIC's PCIe link and measure each other) and
// records each result on both ends.
func runCrossNode(ctx context.Context, runs []crossRun, run pairRunner) map[string]map[string]RemoteNIC {
	out := map[string]map[string]RemoteNIC{}
	put := func(host, nic string, r RemoteNIC) {
		if out[host] == nil {
			out[host] = map[string]RemoteNIC{}
		}
		out[host][nic] = r
	}
	for _, r := range runs {
		if ctx.Err() != nil {
			break
		}
		gbps, why, err := run(ctx, r)
		if err != nil {
			why = err.Error()
		}
		put(r.server.Host.Name, r.serverNIC.Name, RemoteNIC{Peer: r.client.Host.Name, PeerNIC: r.clientNIC.Name, GBps: gbps, Why: why})
		put(r.client.Host.Name, r.clientNIC.Name, RemoteNIC{Peer: r.server.Host.Name, PeerNIC: r.serverNIC.Name, GBps: gbps, Why: why})
	}
	return out
}

// crossNodeGroups finds, for every node block with two or more targets,
// its hosts' active NICs (a probe of each) and whether each has
// ib_write_bw. Simulated and local hosts are left out: they all run on
// this machine, and the ib_write_bw stand-ins of two simulated roots
// share no rendezvous, so there is nothing between them to measure.
func crossNodeGroups(ctx context.Context, targets []target.Host, o Options) [][]crossEnd {
	var order []*spec.Node
	members := map[*spec.Node][]target.Host{}
	for _, t := range targets {
		if t.Node == nil || len(t.Node.Hosts) < 2 || connect.RunsHere(t.Host.Name) {
			continue
		}
		if _, ok := members[t.Node]; !ok {
			order = append(order, t.Node)
		}
		members[t.Node] = append(members[t.Node], t)
	}
	var groups [][]crossEnd
	for _, n := range order {
		var ends []crossEnd
		for _, tg := range members[n] {
			nics, ok := probeNICs(ctx, o, tg)
			if ok {
				ends = append(ends, crossEnd{tg: tg, nics: nics})
			}
		}
		if len(ends) >= 2 {
			groups = append(groups, ends)
		}
	}
	return groups
}

// probeNICs returns a host's active NICs when it has ib_write_bw.
func probeNICs(ctx context.Context, o Options, tg target.Host) ([]NIC, bool) {
	t, err := o.Target.Connect(ctx, tg.Host)
	if err != nil {
		return nil, false
	}
	defer t.Close()
	have, err := installed(ctx, t)
	if err != nil || !have["ib_write_bw"] {
		return nil, false
	}
	node, err := target.ProbeOver(ctx, t, tg.Host)
	if err != nil {
		return nil, false
	}
	if o.KB == nil {
		return nil, false
	}
	info := NewHostInfo(o.KB, tg.Host.Name, node, tg.Node)
	return info.NICs, len(info.NICs) > 0
}

// sshPairRunner runs the server over one transport and the client, a
// second later, over the other, the client connecting to the server's
// inventory name (which must resolve on the client node, as it does for
// a cluster's own host names).
func sshPairRunner(connectTo target.Connector) pairRunner {
	return func(ctx context.Context, r crossRun) (float64, string, error) {
		ts, err := connectTo(ctx, r.server.Host)
		if err != nil {
			return 0, "", err
		}
		defer ts.Close()
		tc, err := connectTo(ctx, r.client.Host)
		if err != nil {
			return 0, "", err
		}
		defer tc.Close()
		var wg sync.WaitGroup
		var serr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, serr = PairServer(ctx, ts, r.serverNIC.Name, r.port)
		}()
		gbps, why, err := PairClient(ctx, tc, r.clientNIC.Name, r.port, hostAddress(r.server.Host))
		wg.Wait()
		if err != nil {
			return 0, "", err
		}
		if serr != nil {
			return 0, "", serr
		}
		if why != "" {
			return 0, fmt.Sprintf("%s %s → %s %s: %s", r.server.Host.Name, r.serverNIC.Name, r.client.Host.Name, r.clientNIC.Name, why), nil
		}
		return gbps, "", nil
	}
}

// PairServer runs the server end of a node-to-node ib_write_bw run over
// t, on RDMA device nic at TCP port port, bounded to a minute; why says
// why it failed ("" when it served its client).
func PairServer(ctx context.Context, t transport.Transport, nic string, port int) (why string, err error) {
	res, err := t.Run(ctx, transport.Command{Script: "exec timeout -k 5 60 " + quoteAll(tool.IBWriteBWServerArgs(nic, port)) + " >/dev/null 2>&1\n"})
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return fmt.Sprintf("the ib_write_bw server on %s exited with status %d", nic, res.ExitCode), nil
	}
	return "", nil
}

// PairClient runs the client end, a second after its server started, on
// nic, connecting to server (a host name the client node resolves) at
// port, and returns the bandwidth in GB/s, or why there is none. A
// client that found no server listening tries again a second later, up
// to pairConnectTries times: the server's end may start late (an srun
// step of its own, a slow SSH login), and perftest's client does not wait
// for it.
func PairClient(ctx context.Context, t transport.Transport, nic string, port int, server string) (gbps float64, why string, err error) {
	for try := 1; ; try++ {
		res, err := t.Run(ctx, transport.Command{Script: "sleep 1\nexec timeout -k 5 60 " + quoteAll(tool.IBWriteBWClientArgs(nic, port, server)) + "\n"})
		if err != nil {
			return 0, "", err
		}
		v, perr := tool.ParseIBWriteBW(bytes.NewReader(res.Stdout))
		if perr == nil && v.AvgGbps > 0 {
			return v.AvgGbps / 8, "", nil
		}
		if try < pairConnectTries && bytes.Contains(res.Stderr, []byte("Couldn't connect to")) && ctx.Err() == nil {
			continue
		}
		return 0, firstNonEmpty(errText(perr), lastLine(res.Stderr, res.Stdout)), nil
	}
}

// pairConnectTries is how many times a node-to-node client dials a
// server that is not listening yet.
const pairConnectTries = 3

// hostAddress is the name the client dials: the inventory host name.
func hostAddress(h spec.Host) string { return h.Name }

// NodeToNodeNotRun is for an engine that benches each node on its own and
// cannot pair nodes: every host the SSH fan-out would have paired node to
// node (one of two or more hosts of a node block, not on this machine,
// whose own NICs ib_write_bw measured) gets a not-measured row saying
// why, after its other network rows. A bench that did not measure the
// pairs must not read as one that had none to measure.
func NodeToNodeNotRun(targets []target.Host, results map[string]NodeResult, why string) {
	// lastNetwork is the index of a host's last network row, and whether
	// ib_write_bw measured one of its NICs.
	lastNetwork := func(h Host) (int, bool) {
		last, measured := -1, false
		for i, m := range h.Layers {
			if m.Layer != LayerNetwork {
				continue
			}
			last = i
			if m.Test == "rdma_write" && m.Verdict != VerdictNotMeasured {
				measured = true
			}
		}
		return last, measured
	}
	paired := map[*spec.Node][]string{}
	var order []*spec.Node
	for _, t := range targets {
		r, ok := results[t.Host.Name]
		if t.Node == nil || !ok || connect.RunsHere(t.Host.Name) {
			continue
		}
		if _, measured := lastNetwork(r.Host); measured {
			if _, seen := paired[t.Node]; !seen {
				order = append(order, t.Node)
			}
			paired[t.Node] = append(paired[t.Node], t.Host.Name)
		}
	}
	row := notMeasured(LayerNetwork, "NICs node to node", TestNodeToNode, Missing{Tool: "ib_write_bw", Reason: why})
	for _, n := range order {
		if len(paired[n]) < 2 {
			continue
		}
		for _, name := range paired[n] {
			r := results[name]
			last, _ := lastNetwork(r.Host)
			layers := append([]Measurement{}, r.Host.Layers[:last+1]...)
			layers = append(layers, row)
			r.Host.Layers = append(layers, r.Host.Layers[last+1:]...)
			results[name] = r
		}
	}
}
