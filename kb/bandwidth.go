package kb

import (
	"fmt"
	"strconv"
	"strings"
)

// BandwidthKind says what a bandwidth figure is: the most the hardware can
// move (a vendor's peak) or what a published measurement achieved.
type BandwidthKind string

const (
	// Peak is a vendor's theoretical maximum: a healthy device measures
	// below it.
	Peak BandwidthKind = "peak"
	// Achievable is a figure a public measurement reached on healthy
	// hardware.
	Achievable BandwidthKind = "achievable"
)

// MemoryBandwidth is one row of gpu-memory-bandwidth.tsv: a GPU model's
// device memory (HBM) bandwidth.
type MemoryBandwidth struct {
	// Model is the gpu-models.tsv row.
	Model string
	// GBps is the bandwidth in GB/s (10^9 bytes per second).
	GBps float64
	// Kind says whether GBps is a peak or an achievable figure.
	Kind BandwidthKind
	Fact
}

// PCIeRate is one row of pcie-link-rates.tsv: a PCIe generation's
// transfer rate per lane and its line code.
type PCIeRate struct {
	// Generation is the PCIe generation (1 to 5).
	Generation int
	// GTps is the raw transfer rate per lane in GT/s.
	GTps float64
	// PayloadBits and LineBits are the line code (128 and 130 for
	// 128b/130b).
	PayloadBits, LineBits int
	Fact
}

// GBpsPerDirection is the link's data rate in one direction in GB/s for
// width lanes: the transfer rate less its line code, over 8 bits a byte.
// It is a peak: packet headers and flow control take a further share.
func (p PCIeRate) GBpsPerDirection(width int) float64 {
	if p.LineBits == 0 || width <= 0 {
		return 0
	}
	return p.GTps * float64(p.PayloadBits) / float64(p.LineBits) / 8 * float64(width)
}

func (kb *KB) loadBandwidth() error {
	t, err := readTable(kb.fsys, "data/gpu-memory-bandwidth.tsv", "model", "hbm_gbps", "kind", "status", "sources", "notes")
	if err != nil {
		return err
	}
	kb.hbm = map[string]MemoryBandwidth{}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		if kb.modelIndex(r.get("model")) < 0 {
			return r.errorf("model %q is not a model of gpu-models.tsv", r.get("model"))
		}
		if _, dup := kb.hbm[r.get("model")]; dup {
			return r.errorf("model %q defined twice", r.get("model"))
		}
		v, err := strconv.ParseFloat(r.get("hbm_gbps"), 64)
		if err != nil || v <= 0 {
			return r.errorf("hbm_gbps %q: want a positive number of GB/s", r.get("hbm_gbps"))
		}
		kind, err := parseKind(r.get("kind"))
		if err != nil {
			return r.errorf("%v", err)
		}
		kb.hbm[r.get("model")] = MemoryBandwidth{Model: r.get("model"), GBps: v, Kind: kind, Fact: r.fact(st, "sources", "notes")}
	}

	t, err = readTable(kb.fsys, "data/pcie-link-rates.tsv", "generation", "transfer_gt_s", "encoding", "status", "sources", "notes")
	if err != nil {
		return err
	}
	kb.pcie = map[int]PCIeRate{}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		gen, err := strconv.Atoi(r.get("generation"))
		if err != nil || gen < 1 {
			return r.errorf("generation %q: want 1, 2, …", r.get("generation"))
		}
		if _, dup := kb.pcie[gen]; dup {
			return r.errorf("generation %d defined twice", gen)
		}
		gt, err := strconv.ParseFloat(r.get("transfer_gt_s"), 64)
		if err != nil || gt <= 0 {
			return r.errorf("transfer_gt_s %q: want GT/s", r.get("transfer_gt_s"))
		}
		var payload, line int
		if _, err := fmt.Sscanf(r.get("encoding"), "%db/%db", &payload, &line); err != nil || payload <= 0 || line < payload {
			return r.errorf("encoding %q: want a line code like 128b/130b", r.get("encoding"))
		}
		kb.pcie[gen] = PCIeRate{Generation: gen, GTps: gt, PayloadBits: payload, LineBits: line, Fact: r.fact(st, "sources", "notes")}
	}
	return nil
}

func parseKind(cell string) (BandwidthKind, error) {
	switch k := BandwidthKind(strings.TrimSpace(cell)); k {
	case Peak, Achievable:
		return k, nil
	}
	return "", fmt.Errorf("kind %q: want peak or achievable", cell)
}

// HBMBandwidth returns the device memory bandwidth of a gpu-models.tsv
// model; ok is false when the table has no row for it.
func (kb *KB) HBMBandwidth(model string) (MemoryBandwidth, bool) {
	m, ok := kb.hbm[model]
	return m, ok
}

// PCIeLinkRate returns the transfer rate of a PCIe generation; ok is false
// for a generation the table does not hold.
func (kb *KB) PCIeLinkRate(gen int) (PCIeRate, bool) {
	p, ok := kb.pcie[gen]
	return p, ok
}
