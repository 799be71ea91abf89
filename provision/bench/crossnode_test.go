package bench

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/spec"
)

func end(name string, nics ...string) crossEnd {
	e := crossEnd{tg: target.Host{Host: spec.Host{Name: name}}}
	for _, n := range nics {
		layer := "InfiniBand"
		if n[0] == 'e' {
			layer = "Ethernet"
		}
		e.nics = append(e.nics, NIC{Name: n, Port: 1, RateGbps: 400, LinkLayer: layer})
	}
	return e
}

// TestCrossPairs: hosts pair in order, an odd last host is left out, and
// NIC i of a link layer meets NIC i of the same layer on the other host.
func TestCrossPairs(t *testing.T) {
	tests := map[string]struct {
		hosts    []crossEnd
		want     []string
		unpaired []string
	}{
		"two hosts, same rails": {
			hosts: []crossEnd{end("a", "mlx5_0", "mlx5_1"), end("b", "mlx5_0", "mlx5_1")},
			want:  []string{"a mlx5_0 <- b mlx5_0", "a mlx5_1 <- b mlx5_1"},
		},
		"three hosts: the third waits": {
			hosts:    []crossEnd{end("a", "mlx5_0"), end("b", "mlx5_0"), end("c", "mlx5_0")},
			want:     []string{"a mlx5_0 <- b mlx5_0"},
			unpaired: []string{"c"},
		},
		"four hosts: a-b and c-d": {
			hosts: []crossEnd{end("a", "mlx5_0"), end("b", "mlx5_0"), end("c", "mlx5_0"), end("d", "mlx5_0")},
			want:  []string{"a mlx5_0 <- b mlx5_0", "c mlx5_0 <- d mlx5_0"},
		},
		"rails by link layer, extra NIC unmatched": {
			hosts: []crossEnd{end("a", "eth0x", "mlx5_0", "mlx5_1"), end("b", "eth1x", "mlx5_4")},
			want:  []string{"a eth0x <- b eth1x", "a mlx5_0 <- b mlx5_4"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			runs, unpaired := crossPairs(tc.hosts)
			var got []string
			ports := map[int]bool{}
			for _, r := range runs {
				got = append(got, fmt.Sprintf("%s %s <- %s %s", r.server.Host.Name, r.serverNIC.Name, r.client.Host.Name, r.clientNIC.Name))
				if ports[r.port] {
					t.Errorf("port %d used twice", r.port)
				}
				ports[r.port] = true
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("runs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.unpaired, unpaired); diff != "" {
				t.Errorf("unpaired (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCrossNodeJudged: a fake runner gives one rail half its rate and
// another an error; both hosts get a row per rail naming the partner,
// the slow rail is below its NIC's link rate, the failed one not
// measured, and the network is the bottleneck.
func TestCrossNodeJudged(t *testing.T) {
	k := loadKB(t)
	a, b := hgxH100(), hgxH100()
	a.Name, b.Name = "gpu1", "gpu2"
	runs, _ := crossPairs([]crossEnd{{tg: target.Host{Host: spec.Host{Name: "gpu1"}}, nics: a.NICs}, {tg: target.Host{Host: spec.Host{Name: "gpu2"}}, nics: b.NICs}})
	if len(runs) != 8 {
		t.Fatalf("%d runs, want one per rail", len(runs))
	}
	remote := runCrossNode(context.Background(), runs, func(_ context.Context, r crossRun) (float64, string, error) {
		switch r.serverNIC.Name {
		case "mlx5_3":
			return 196.0 / 8, "", nil
		case "mlx5_6":
			return 0, "", errors.New("Couldn't connect to gpu1:18607")
		}
		return 390.0 / 8, "", nil
	})
	for _, host := range []struct {
		info HostInfo
		peer string
	}{{a, "gpu2"}, {b, "gpu1"}} {
		obs := healthy(host.info)
		obs.Remote = remote[host.info.Name]
		h := Judge(k, host.info, obs, nil, Layers())
		got := map[string]Verdict{}
		for _, m := range h.Layers {
			if m.Test == TestNodeToNode {
				got[m.Device] = m.Verdict
			}
		}
		want := map[string]Verdict{}
		for i := range 8 {
			v := VerdictOK
			switch i {
			case 3:
				v = VerdictBelow
			case 6:
				v = VerdictNotMeasured
			}
			want[fmt.Sprintf("mlx5_%d <-> %s mlx5_%d", i, host.peer, i)] = v
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: node-to-node rows (-want +got):\n%s", host.info.Name, diff)
		}
		if h.Bottleneck == nil || h.Bottleneck.Layer != LayerNetwork {
			t.Errorf("%s: bottleneck %+v, want the network", host.info.Name, h.Bottleneck)
		}
	}
}

// An engine that cannot pair nodes marks the hosts the SSH fan-out would
// have paired, and only those, with a not-measured node-to-node row right
// after their network rows.
func TestNodeToNodeNotRun(t *testing.T) {
	t.Parallel()
	pair := &spec.Node{Name: "pair", Hosts: hostsNamed("gpu01", "gpu02", "gpu03")}
	lone := &spec.Node{Name: "lone", Hosts: hostsNamed("gpu11", "gpu12")}
	single := &spec.Node{Name: "single", Hosts: hostsNamed("gpu09")}
	sims := &spec.Node{Name: "sims", Hosts: hostsNamed("sim://hgx-h100-converged/a", "sim://hgx-h100-converged/b")}
	tg := func(n *spec.Node, name string) target.Host { return target.Host{Host: spec.Host{Name: name}, Node: n} }
	v := 40.0
	nic := Measurement{Layer: LayerNetwork, Device: "mlx5_0", Test: "rdma_write", MeasuredGBps: &v, Verdict: VerdictOK}
	noTool := Measurement{Layer: LayerNetwork, Device: "all NICs", Test: "rdma_write", Verdict: VerdictNotMeasured}
	storage := Measurement{Layer: LayerStorage, Device: "/scratch", Test: "read", Verdict: VerdictNotMeasured}
	host := func(name string, ms ...Measurement) NodeResult { return NodeResult{Host: Host{Host: name, Layers: ms}} }
	targets := []target.Host{tg(pair, "gpu01"), tg(pair, "gpu02"), tg(pair, "gpu03"), tg(lone, "gpu11"), tg(lone, "gpu12"), tg(single, "gpu09"), tg(sims, "sim://hgx-h100-converged/a"), tg(sims, "sim://hgx-h100-converged/b")}
	results := map[string]NodeResult{
		"gpu01":                      host("gpu01", nic, storage),
		"gpu02":                      host("gpu02", noTool),
		"gpu03":                      host("gpu03", nic),
		"gpu11":                      host("gpu11", nic),
		"gpu12":                      host("gpu12", noTool),
		"gpu09":                      host("gpu09", nic),
		"sim://hgx-h100-converged/a": host("sim://hgx-h100-converged/a", nic),
		"sim://hgx-h100-converged/b": host("sim://hgx-h100-converged/b", nic),
	}
	NodeToNodeNotRun(targets, results, "why")
	row := Measurement{Layer: LayerNetwork, Device: "NICs node to node", Test: TestNodeToNode, Verdict: VerdictNotMeasured, Note: "why"}
	want := map[string]NodeResult{
		"gpu01":                      host("gpu01", nic, row, storage), // paired over SSH: marked, before storage
		"gpu02":                      host("gpu02", noTool),            // no ib_write_bw: SSH would not pair it either
		"gpu03":                      host("gpu03", nic, row),          // paired with gpu01
		"gpu11":                      host("gpu11", nic),               // its only partner has no ib_write_bw
		"gpu12":                      host("gpu12", noTool),
		"gpu09":                      host("gpu09", nic), // alone in its node block
		"sim://hgx-h100-converged/a": host("sim://hgx-h100-converged/a", nic),
		"sim://hgx-h100-converged/b": host("sim://hgx-h100-converged/b", nic),
	}
	if diff := cmp.Diff(want, results); diff != "" {
		t.Errorf("NodeToNodeNotRun (-want +got):\n%s", diff)
	}
}

func hostsNamed(names ...string) []spec.Host {
	hs := make([]spec.Host, len(names))
	for i, n := range names {
		hs[i] = spec.Host{Name: n}
	}
	return hs
}

// NodeToNodeRounds pairs as Run pairs, and round k holds the k-th run of
// every pair of hosts, so no host is in two runs of a round; a host with
// no NICs listed, or alone in its block, is in none.
func TestNodeToNodeRounds(t *testing.T) {
	t.Parallel()
	blk := &spec.Node{Name: "blk", Hosts: hostsNamed("a", "b", "c", "d", "e")}
	other := &spec.Node{Name: "other", Hosts: hostsNamed("x", "y")}
	tg := func(n *spec.Node, name string) target.Host { return target.Host{Host: spec.Host{Name: name}, Node: n} }
	nics := map[string][]NIC{
		"a": end("a", "mlx5_0", "mlx5_1").nics, "b": end("b", "mlx5_0", "mlx5_1").nics,
		"c": end("c", "mlx5_0").nics, "d": end("d", "mlx5_0").nics,
		"x": end("x", "mlx5_0").nics, // y has none listed
	}
	targets := []target.Host{tg(blk, "a"), tg(blk, "b"), tg(blk, "c"), tg(blk, "d"), tg(blk, "e"), tg(other, "x"), tg(other, "y")}
	var got [][]string
	for _, r := range NodeToNodeRounds(targets, nics) {
		var rs []string
		for _, p := range r {
			rs = append(rs, fmt.Sprintf("%s %s <- %s %s", p.Server.Host.Name, p.ServerNIC, p.Client.Host.Name, p.ClientNIC))
		}
		got = append(got, rs)
	}
	want := [][]string{{"a mlx5_0 <- b mlx5_0", "c mlx5_0 <- d mlx5_0"}, {"a mlx5_1 <- b mlx5_1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rounds (-want +got):\n%s", diff)
	}
}
