package outlier

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// gpus makes one host's values of one metric, bus ids gpu0… in order.
func gpus(host, model, metric string, higher bool, vs ...float64) []Value {
	var out []Value
	for i, v := range vs {
		out = append(out, Value{Host: host, Device: fmt.Sprintf("gpu%d", i), Model: model, Metric: metric, V: v, HigherIsBetter: higher})
	}
	return out
}

func cat(vss ...[]Value) []Value {
	var out []Value
	for _, vs := range vss {
		out = append(out, vs...)
	}
	return out
}

type flagged struct {
	Host, Device, Metric string
	Scope                Scope
}

func TestFlag(t *testing.T) {
	const h100 = "NVIDIA H100 80GB HBM3"
	tests := map[string]struct {
		values []Value
		margin float64
		want   []flagged
	}{
		"all alike": {
			values: gpus("a", h100, "sm_clock_mhz", true, 1980, 1980, 1975, 1980, 1980, 1980, 1980, 1980),
		},
		"one slow clock in a node": {
			values: gpus("a", h100, "sm_clock_mhz", true, 1980, 1980, 1980, 1980, 1980, 1410, 1980, 1980),
			want:   []flagged{{"a", "gpu5", "sm_clock_mhz", ScopeNode}},
		},
		// 9 % below passes the default 10 % margin ...
		"within the default margin": {
			values: gpus("a", h100, "sm_clock_mhz", true, 1000, 1000, 910),
		},
		// ... and fails a 5 % one (SuperBench's).
		"a tighter margin": {
			values: gpus("a", h100, "sm_clock_mhz", true, 1000, 1000, 910),
			margin: 0.05,
			want:   []flagged{{"a", "gpu2", "sm_clock_mhz", ScopeNode}},
		},
		// Lower is better: a hot GPU is the outlier, a cool one is not.
		"temperature above the median": {
			values: gpus("a", h100, "temperature_c", false, 40, 41, 40, 60, 30),
			want:   []flagged{{"a", "gpu3", "temperature_c", ScopeNode}},
		},
		// Two values cannot tell which one is off.
		"too few peers": {
			values: gpus("a", h100, "sm_clock_mhz", true, 1980, 1000),
		},
		// Models are not peers of each other: an L40S is not a slow H100.
		"models are separate": {
			values: cat(gpus("a", h100, "sm_clock_mhz", true, 1980, 1980, 1980), gpus("a", "NVIDIA L40S", "sm_clock_mhz", true, 1000, 1000, 1000)),
		},
		// Every GPU of host b is slow: within b nothing stands out, across
		// the fleet all of them do.
		"a whole node slow shows only across the fleet": {
			values: cat(gpus("a", h100, "pcie_gbps", true, 64, 64, 64), gpus("b", h100, "pcie_gbps", true, 32, 32, 32), gpus("c", h100, "pcie_gbps", true, 64, 64, 64)),
			want: []flagged{
				{"b", "gpu0", "pcie_gbps", ScopeFleet},
				{"b", "gpu1", "pcie_gbps", ScopeFleet},
				{"b", "gpu2", "pcie_gbps", ScopeFleet},
			},
		},
		// One host only: no fleet comparison on top of the node's.
		"one host has no fleet scope": {
			values: gpus("a", h100, "power_w", true, 700, 700, 300),
			want:   []flagged{{"a", "gpu2", "power_w", ScopeNode}},
		},
		"slow in its node and in the fleet": {
			values: cat(gpus("a", h100, "sm_clock_mhz", true, 1980, 1980, 1000), gpus("b", h100, "sm_clock_mhz", true, 1980, 1980, 1980)),
			want: []flagged{
				{"a", "gpu2", "sm_clock_mhz", ScopeNode},
				{"a", "gpu2", "sm_clock_mhz", ScopeFleet},
			},
		},
		// A median of zero (idle power read as 0) has no relative margin.
		"zero median": {
			values: gpus("a", h100, "power_w", true, 0, 0, 0, 5),
		},
		"no values": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []flagged
			for _, f := range Flag(tc.values, tc.margin) {
				got = append(got, flagged{f.Host, f.Device, f.Metric, f.Scope})
				if f.Worse <= 0 || f.Peers < MinPeers || f.Median <= 0 {
					t.Errorf("finding %+v: worse, peers and median must be set", f)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Flag (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFlagNumbers(t *testing.T) {
	got := Flag(gpus("a", "H100", "sm_clock_mhz", true, 2000, 2000, 1000, 2000), 0)
	want := []Finding{{Value: Value{Host: "a", Device: "gpu2", Model: "H100", Metric: "sm_clock_mhz", V: 1000, HigherIsBetter: true}, Scope: ScopeNode, Median: 2000, Peers: 4, Worse: 0.5}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Flag (-want +got):\n%s", diff)
	}
}

func TestStragglers(t *testing.T) {
	p := func(a, b string, v float64) Pair { return Pair{Hosts: [2]string{a, b}, V: v} }
	tests := map[string]struct {
		pairs []Pair
		want  []string
	}{
		"all fast": {
			pairs: []Pair{p("n1", "n2", 155), p("n3", "n4", 154), p("n5", "n6", 156), p("n2", "n3", 155)},
		},
		// n4 is slow with n3 and with n1; n3 and n1 are fast with others.
		"slow with every partner": {
			pairs: []Pair{p("n1", "n2", 155), p("n3", "n4", 78), p("n5", "n6", 156), p("n7", "n8", 155), p("n3", "n5", 155), p("n4", "n1", 77)},
			want:  []string{"n4"},
		},
		// One slow pair names nobody: either node may be the slow one.
		"one slow pair": {
			pairs: []Pair{p("n1", "n2", 155), p("n3", "n4", 78), p("n5", "n6", 156)},
		},
		// Slow with one partner, fast with another: not consistent.
		"not consistently slow": {
			pairs: []Pair{p("n1", "n2", 155), p("n3", "n4", 78), p("n5", "n6", 156), p("n4", "n1", 155), p("n3", "n5", 78)},
			want:  []string{"n3"},
		},
		// Every pair slow: no partner was ever fast, nothing is proven.
		"everything slow": {
			pairs: []Pair{p("n1", "n2", 10), p("n2", "n3", 10), p("n3", "n1", 10)},
		},
		"too few pairs": {
			pairs: []Pair{p("n1", "n2", 155), p("n2", "n3", 70)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, s := range Stragglers(tc.pairs, 0) {
				got = append(got, s.Host)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Stragglers (-want +got):\n%s", diff)
			}
		})
	}
}

func ExampleFlag() {
	values := []Value{
		{Host: "gpu01", Device: "00000000:1B:00.0", Model: "H100", Metric: "sm_clock_mhz", V: 1980, HigherIsBetter: true},
		{Host: "gpu01", Device: "00000000:43:00.0", Model: "H100", Metric: "sm_clock_mhz", V: 1980, HigherIsBetter: true},
		{Host: "gpu01", Device: "00000000:52:00.0", Model: "H100", Metric: "sm_clock_mhz", V: 1410, HigherIsBetter: true},
	}
	for _, f := range Flag(values, DefaultMargin) {
		fmt.Printf("%s %s: %s %.0f is %.0f%% below the %s median %.0f\n", f.Host, f.Device, f.Metric, f.V, 100*f.Worse, f.Scope, f.Median)
	}
	// Output: gpu01 00000000:52:00.0: sm_clock_mhz 1410 is 29% below the node median 1980
}

// TestOnce: a device worse than both its node and the fleet is reported
// once, against its node; other devices and metrics are kept.
func TestOnce(t *testing.T) {
	node := Finding{Value: Value{Host: "a", Device: "gpu5", Metric: "h2d"}, Scope: ScopeNode}
	fleet := node
	fleet.Scope = ScopeFleet
	other := Finding{Value: Value{Host: "a", Device: "gpu5", Metric: "d2h"}, Scope: ScopeFleet}
	tests := map[string]struct {
		in, want []Finding
	}{
		"none":                {nil, nil},
		"node and fleet":      {[]Finding{node, fleet}, []Finding{node}},
		"another metric kept": {[]Finding{node, fleet, other}, []Finding{node, other}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Once(tt.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
