package verify

import (
	"strings"

	"github.com/gpuform/gpuform/kb"
)

// Threshold is one NCCL busbw floor with the public source of its number.
type Threshold struct {
	// GPUModel is the model key, e.g. "H100".
	GPUModel string `json:"gpu_model"`
	// Interconnect is the GPU interconnect the floor applies to.
	Interconnect Interconnect `json:"interconnect"`
	// GPUs is the GPU count of one node of the measured system.
	GPUs int `json:"gpus"`
	// Nodes is the node count of the measured run (1 for a single node).
	Nodes int `json:"nodes"`
	// MinNodes is true when the floor holds for Nodes or more nodes.
	MinNodes bool `json:"min_nodes,omitempty"`
	// Network is the fabric between the nodes of a multi-node floor
	// ("ib_ndr", "gcp_tcpxo", …).
	Network string `json:"network,omitempty"`
	// Collective is the nccl-tests collective, e.g. "all_reduce".
	Collective string `json:"collective"`
	// MinBusBWGBps is the floor in GB/s.
	MinBusBWGBps float64 `json:"min_busbw_gbps"`
	// MessageBytes is the message size the floor was measured at; 0 when
	// the source does not say or the floor is an average (AvgFrom).
	MessageBytes int64 `json:"message_bytes,omitempty"`
	// AvgFrom and AvgTo, when set, say the floor is nccl-tests' "Avg bus
	// bandwidth" of a sweep from AvgFrom to AvgTo bytes, not one size's.
	AvgFrom int64 `json:"avg_from,omitempty"`
	AvgTo   int64 `json:"avg_to,omitempty"`
	// Platform names the published system the number comes from.
	Platform string `json:"platform"`
	// Source lists the public URLs of the number.
	Source string `json:"source"`
}

// Catalogue is a set of floors, looked up by GPU model × interconnect.
type Catalogue struct {
	rows []Threshold
}

// NewCatalogue makes a catalogue of the given floors.
func NewCatalogue(floors []kb.NCCLFloor) *Catalogue {
	c := &Catalogue{}
	for _, f := range floors {
		lo, hi, _ := f.Threshold.AvgRange()
		c.rows = append(c.rows, Threshold{
			GPUModel: f.GPUModel, Interconnect: Interconnect(f.Interconnect), GPUs: f.GPUs,
			Nodes: f.Nodes, MinNodes: f.MinNodes, Network: f.Network,
			Collective: f.Collective, MinBusBWGBps: f.Threshold.BusBWGBps, MessageBytes: f.Threshold.MessageBytes(),
			AvgFrom: lo, AvgTo: hi,
			Platform: f.Threshold.Platform, Source: strings.Join(f.Threshold.Sources, " ; "),
		})
	}
	return c
}

func (c *Catalogue) Rows() []Threshold { return append([]Threshold(nil), c.rows...) }

// Lookup finds the floor for a GPU model (a key such as "H100" or a driver
// name such as "NVIDIA H100 80GB HBM3"), interconnect, GPU count (0 = any)
// and collective ("" = all_reduce).
func (c *Catalogue) Lookup(model string, ic Interconnect, gpus int, collective string) (Threshold, bool) {
	key := kb.ModelKey(model)
	if collective == "" {
		collective = "all_reduce"
	}
	for _, t := range c.rows {
		if t.Nodes <= 1 && t.GPUModel == key && t.Interconnect == ic && t.Collective == collective && (gpus == 0 || gpus == t.GPUs) {
			return t, true
		}
	}
	return Threshold{}, false
}

// LookupMultiNode finds the floor for a run across nodes: GPU model, GPUs
// per node, node count and the network between the nodes must all match
// (a floor for "2+" nodes matches 2 or more); a floor for exactly that
// node count wins over an "N+" one. It never answers with a single-node
// floor: NVLink inside one node is far faster than any network between
// nodes.
func (c *Catalogue) LookupMultiNode(model string, gpusPerNode, nodes int, network, collective string) (Threshold, bool) {
	key := kb.ModelKey(model)
	if collective == "" {
		collective = "all_reduce"
	}
	var best *Threshold
	for i, t := range c.rows {
		if t.Nodes <= 1 || t.GPUModel != key || t.GPUs != gpusPerNode || t.Network != network || t.Collective != collective {
			continue
		}
		switch {
		case t.Nodes == nodes && !t.MinNodes:
			return t, true
		case t.MinNodes && nodes >= t.Nodes && best == nil:
			best = &c.rows[i]
		}
	}
	if best != nil {
		return *best, true
	}
	return Threshold{}, false
}
