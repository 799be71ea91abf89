package bench

import (
	"fmt"

	"github.com/gpuform/gpuform/kb"
)

// factOf returns the first source and the status word of a fact.
func factOf(f kb.Fact) (string, string) {
	return f.Source(), f.Status.String()
}

// ExpectHBM is what nvbandwidth's device_local_copy should reach on a
// model: half the HBM bandwidth, because a copy reads and writes every
// byte while nvbandwidth counts it once (its bandwidth is size / time).
func ExpectHBM(kb *kb.KB, model string) (Expected, bool) {
	m, ok := kb.HBMBandwidth(model)
	if !ok {
		return Expected{}, false
	}
	src, st := factOf(m.Fact)
	return Expected{GBps: m.GBps / 2, Kind: Kind(m.Kind), Source: src, FactStatus: st,
		Why: fmt.Sprintf("half the %g GB/s HBM %s: a copy reads and writes each byte, nvbandwidth counts it once", m.GBps, m.Kind)}, true
}

// ExpectPCIe is a PCIe link's peak in one direction at its maximum
// generation and width: what host↔device copies should approach.
func ExpectPCIe(kb *kb.KB, g GPU) (Expected, bool) {
	r, ok := kb.PCIeLinkRate(g.MaxGen)
	if !ok || g.MaxWidth <= 0 {
		return Expected{}, false
	}
	src, st := factOf(r.Fact)
	return Expected{GBps: r.GBpsPerDirection(g.MaxWidth), Kind: KindPeak, Source: src, FactStatus: st,
		Why: fmt.Sprintf("PCIe Gen%d x%d: %g GT/s × %d/%d ÷ 8 × %d lanes, one direction", g.MaxGen, g.MaxWidth, r.GTps, r.PayloadBits, r.LineBits, g.MaxWidth)}, true
}

// ExpectPeer is what a copy from one GPU to another should reach: the
// model's NVLink bandwidth in one direction (an NVSwitch lets one pair use
// every link), or, without NVLink, the slower of the two PCIe links.
func ExpectPeer(kb *kb.KB, a, b GPU) (Expected, bool) {
	if m, ok := kb.GPU(a.Model); ok && m.NVLinkGBps > 0 && a.Model == b.Model {
		src, st := factOf(m.NVLinkFact)
		return Expected{GBps: m.NVLinkGBps / 2, Kind: KindPeak, Source: src, FactStatus: st,
			Why: fmt.Sprintf("NVLink one direction, half the %g GB/s per GPU", m.NVLinkGBps)}, true
	}
	ea, oka := ExpectPCIe(kb, a)
	eb, okb := ExpectPCIe(kb, b)
	switch {
	case oka && okb && eb.GBps < ea.GBps:
		eb.Why = "no NVLink: the slower PCIe link; " + eb.Why
		return eb, true
	case oka && okb:
		ea.Why = "no NVLink: the slower PCIe link; " + ea.Why
		return ea, true
	}
	return Expected{}, false
}

// ExpectAllReduce is what all_reduce bus bandwidth should reach on gpus
// GPUs of a model in one node: the best published result for that count
// (achievable) when there is one, else the NVLink ceiling (peak).
func ExpectAllReduce(kb *kb.KB, model string, gpus int) (Expected, bool) {
	if gpus < 2 {
		return Expected{}, false
	}
	if t, ok := kb.BestPublishedBusBW(model, "all_reduce", gpus); ok {
		src, st := factOf(t.Fact)
		return Expected{GBps: t.BusBWGBps, Kind: KindAchievable, Source: src, FactStatus: st,
			Why: fmt.Sprintf("published %s all_reduce bus bandwidth on %d GPUs (%s)", t.Kind, gpus, t.Platform)}, true
	}
	m, ok := kb.GPU(model)
	if !ok {
		return Expected{}, false
	}
	// The ring and tree ceiling, not NVLink SHARP's: NVLS's ceiling
	// (unidirectional × 2(n-1)/n) is an upper bound few runs approach,
	// and judging by it would call healthy nodes slow. A run with NVLS
	// may read above 100%.
	c, ok := kb.NVLinkBusBWCeiling(m, "all_gather", gpus)
	if !ok {
		return Expected{}, false
	}
	src, st := factOf(c.Fact)
	return Expected{GBps: c.GBps, Kind: KindPeak, Source: src, FactStatus: st,
		Why: c.Why + " (the ring/tree all_reduce ceiling; NVLink SHARP can exceed it)"}, true
}

// ExpectNIC is a NIC port's link rate in GB/s: its own sysfs rate, or
// the rate the host's other NICs of the same link layer trained at when
// that is higher (a port that came up at half rate is slow, not healthy at
// its own rate).
func ExpectNIC(h HostInfo, n NIC) (Expected, bool) {
	if n.RateGbps <= 0 {
		return Expected{}, false
	}
	e := Expected{GBps: n.RateGbps / 8, Kind: KindPeak,
		Source: fmt.Sprintf("/sys/class/infiniband/%s/ports/%d/rate", n.Name, n.Port),
		Why:    fmt.Sprintf("link rate %q", n.RateText)}
	if peer := h.PeerRate(n); peer > n.RateGbps {
		e.GBps = peer / 8
		e.Why = fmt.Sprintf("the %g Gb/s the node's other %s ports run at; this port's link is up at %q", peer, n.LinkLayer, n.RateText)
	}
	return e, true
}
