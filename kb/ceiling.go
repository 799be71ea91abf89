package kb

import (
	"fmt"
	"strings"
)

// BusBWCeiling is the highest nccl-tests bus bandwidth a collective can
// reach over NVLink inside one node, and the fact it rests on.
type BusBWCeiling struct {
	// GBps is the ceiling in GB/s.
	GBps float64
	// UnidirectionalGBps is the per-GPU NVLink bandwidth in one direction,
	// half the bidirectional figure of gpu-models.tsv.
	UnidirectionalGBps float64
	// NVLS is true when the ceiling counts NVLink SHARP (all_reduce only).
	NVLS bool
	// Why says how the figure was computed, for messages.
	Why string
	Fact
}

// NVLinkBusBWCeiling answers for a collective ("all_reduce", "all_gather",
// "reduce_scatter"; any other collective moves each byte once per
// direction too) on gpus GPUs of a model. nccl-tests' busbw of all_gather
// and reduce_scatter, and of a ring or tree all_reduce, cannot exceed the
// unidirectional NVLink bandwidth; an NVLS all_reduce sends and receives
// each byte once, so its busbw (algbw x 2(n-1)/n) can reach unidirectional x
// 2(n-1)/n. ok=false without an NVLink figure or with fewer than two GPUs.
func (kb *KB) NVLinkBusBWCeiling(m GPUModel, collective string, gpus int) (BusBWCeiling, bool) {
	if m.NVLinkGBps <= 0 || gpus < 2 {
		return BusBWCeiling{}, false
	}
	uni := m.NVLinkGBps / 2
	c := BusBWCeiling{GBps: uni, UnidirectionalGBps: uni, Fact: m.NVLinkFact.withStatus(m.NVLinkFact.Status.Weaker(Derived)),
		Why: fmt.Sprintf("unidirectional NVLink bandwidth, half the %g GB/s bidirectional figure", m.NVLinkGBps)}
	if collective == "all_reduce" && m.NVLS != No {
		// Without knowing NVLS is absent, the ceiling must allow it: a
		// ceiling is an upper bound.
		c.GBps = uni * 2 * float64(gpus-1) / float64(gpus)
		c.NVLS = true
		c.Why = fmt.Sprintf("NVLink SHARP all_reduce: unidirectional NVLink bandwidth %g GB/s x 2(n-1)/n for n=%d", uni, gpus)
		if m.NVLS == Yes {
			c.Fact = c.Fact.withStatus(c.Status.Weaker(m.NVLSFact.Status))
			c.Sources = append(append([]string(nil), c.Sources...), m.NVLSFact.Sources...)
		}
	}
	return c, true
}

// BestPublishedBusBW is the highest single-node figure nccl-thresholds.tsv
// publishes (floors and typical results) for a collective on gpus GPUs of
// a GPU family over intra-node NVLink.
func (kb *KB) BestPublishedBusBW(model, collective string, gpus int) (NCCLThreshold, bool) {
	fam := ModelKey(model)
	if fam == "" || gpus == 0 {
		return NCCLThreshold{}, false
	}
	var best NCCLThreshold
	found := false
	for _, t := range kb.nccltest {
		if t.GPUs != gpus || !strings.Contains(strings.ToLower(t.Interconnect), "intra-node") || !strings.HasPrefix(t.Collective, collective) {
			continue
		}
		if t.Kind != "floor" && t.Kind != "typical" {
			continue
		}
		if !strings.Contains(strings.ToUpper(t.Platform), fmt.Sprintf("%dX %s", gpus, fam)) {
			continue
		}
		if !found || t.BusBWGBps > best.BusBWGBps {
			best, found = t, true
		}
	}
	return best, found
}
