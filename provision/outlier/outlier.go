package outlier

import (
	"cmp"
	"slices"
)

// DefaultMargin is how far below its peers' median a value may fall before
// it is flagged: 10 %. gpu-fryer fails a GPU whose TFLOPS are more than
// `--tflops-tolerance` (default "10") percent below the best GPU of its
// node (https://github.com/huggingface/gpu-fryer/blob/10ad5c807536a07d58d5def53dff4b77484230d8/src/main.rs,
// listed in the project's reference landscape), and NVIDIA AICR's NCCL
// validator applies a 10 % tolerance to its floors (kb's
// nccl-thresholds.tsv, the a3-megagpu-8g row). The median rather than the
// best (gpu-fryer) or the mean (DCGM 4.5's tolerance against the system
// mean) is the reference, so that one fast or one broken device does not
// move it. SuperBench's published rules use a tighter 5 % for GEMM and
// memory bandwidth; callers that want it pass 0.05.
const DefaultMargin = 0.10

// MinPeers is the fewest values a comparison group needs, the device
// itself included: with two values their median is their mean and neither
// can be told to be the odd one out.
const MinPeers = 3

// Value is one measurement of one device.
type Value struct {
	// Host is the node the device is in.
	Host string `json:"host"`
	// Device identifies the device within its host, e.g. its PCI bus id
	// ("00000000:1B:00.0"); for a node-wide value (a pair of nodes' busbw)
	// it may be empty.
	Device string `json:"device,omitempty"`
	// Model is what makes devices peers: only values of the same model
	// (and metric) are compared, e.g. "NVIDIA H100 80GB HBM3".
	Model string `json:"model"`
	// Metric names what was measured, e.g. "sm_clock_mhz".
	Metric string `json:"metric"`
	// V is the measured value.
	V float64 `json:"value"`
	// HigherIsBetter is true for clocks, bandwidths and link widths, false
	// for temperatures and other values where more is worse.
	HigherIsBetter bool `json:"higher_is_better"`
}

// Scope is the set of peers a value was compared with.
type Scope string

// Scopes.
const (
	// ScopeNode compares a device with the devices of the same model in
	// its own node.
	ScopeNode Scope = "node"
	// ScopeFleet compares a device with every device of the same model
	// across the values given. It is only formed when the values come from
	// more than one host (otherwise it is ScopeNode again).
	ScopeFleet Scope = "fleet"
)

// Finding is a value worse than its peers' median by more than the margin.
type Finding struct {
	Value
	// Scope says which peers it was compared with.
	Scope Scope `json:"scope"`
	// Median is the median of the comparison group, the value included.
	Median float64 `json:"median"`
	// Peers is the size of the comparison group, the value included.
	Peers int `json:"peers"`
	// Worse is how much worse than the median the value is, as a fraction
	// of the median (0.25: 25 % below, or above when lower is better).
	Worse float64 `json:"worse"`
}

// Flag compares every value with the median of its peers — the values of
// the same metric and model in the same host (ScopeNode), and across all
// hosts given (ScopeFleet) — and returns one Finding per value and scope
// where it is worse than that median by more than margin (a fraction: 0.1
// is 10 %; margin <= 0 means DefaultMargin). Groups with fewer than
// MinPeers values, or a median that is not positive, are not judged: a
// relative margin of a zero or negative median means nothing. Findings are
// sorted by host, device, metric and scope (node before fleet).
func Flag(values []Value, margin float64) []Finding {
	if margin <= 0 {
		margin = DefaultMargin
	}
	type key struct{ host, metric, model string }
	node := map[key][]Value{}
	fleet := map[key][]Value{}
	for _, v := range values {
		node[key{v.Host, v.Metric, v.Model}] = append(node[key{v.Host, v.Metric, v.Model}], v)
		fleet[key{"", v.Metric, v.Model}] = append(fleet[key{"", v.Metric, v.Model}], v)
	}
	var out []Finding
	judge := func(group []Value, scope Scope) {
		if len(group) < MinPeers {
			return
		}
		m := median(group)
		if m <= 0 {
			return
		}
		for _, v := range group {
			worse := (m - v.V) / m
			if !v.HigherIsBetter {
				worse = (v.V - m) / m
			}
			if worse > margin {
				out = append(out, Finding{Value: v, Scope: scope, Median: m, Peers: len(group), Worse: worse})
			}
		}
	}
	for _, g := range node {
		judge(g, ScopeNode)
	}
	for _, g := range fleet {
		if manyHosts(g) {
			judge(g, ScopeFleet)
		}
	}
	slices.SortFunc(out, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Device, b.Device), cmp.Compare(a.Metric, b.Metric),
			cmp.Compare(scopeRank(a.Scope), scopeRank(b.Scope)), cmp.Compare(a.Model, b.Model))
	})
	return out
}

func scopeRank(s Scope) int {
	if s == ScopeNode {
		return 0
	}
	return 1
}

func manyHosts(g []Value) bool {
	for _, v := range g[1:] {
		if v.Host != g[0].Host {
			return true
		}
	}
	return false
}

// median is the middle value of the group (the mean of the two middle
// values of an even-sized group).
func median(g []Value) float64 {
	vs := make([]float64, len(g))
	for i, v := range g {
		vs[i] = v.V
	}
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

// Once keeps the first finding of each host, device and metric. Flag
// sorts the node comparison before the fleet one, so a device off in both
// is reported once, against its node.
func Once(fs []Finding) []Finding {
	seen := map[[3]string]bool{}
	var out []Finding
	for _, f := range fs {
		key := [3]string{f.Host, f.Device, f.Metric}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, f)
	}
	return out
}
