package verify

import (
	"strings"

	"github.com/gpuform/gpuform/lint/compat"
)

// Threshold is one NCCL busbw floor with the public source of its number.
type Threshold struct {
	// GPUModel is the model key, e.g. "H100".
	GPUModel string `json:"gpu_model"`
	// Interconnect is the GPU interconnect the floor applies to.
	Interconnect Interconnect `json:"interconnect"`
	// GPUs is the GPU count of the measured system.
	GPUs int `json:"gpus"`
	// Collective is the nccl-tests collective, e.g. "all_reduce".
	Collective string `json:"collective"`
	// MinBusBWGBps is the floor in GB/s.
	MinBusBWGBps float64 `json:"min_busbw_gbps"`
	// MessageBytes is the message size the floor was measured at; 0 when
	// the source does not say.
	MessageBytes int64 `json:"message_bytes,omitempty"`
	// Platform names the published system the number comes from.
	Platform string `json:"platform"`
	// Source lists the public URLs of the number.
	Source string `json:"source"`
}

// Catalogue is a set of floors, looked up by GPU model × interconnect.
type Catalogue struct {
	rows []Threshold
}

// DefaultCatalogue is the floors of the knowledge base (lint/compat's
// nccl-floors.tsv joined with nccl-thresholds.tsv).
func DefaultCatalogue() *Catalogue {
	return NewCatalogue(compat.Default().NCCLFloors())
}

// NewCatalogue makes a catalogue of the given floors.
func NewCatalogue(floors []compat.NCCLFloor) *Catalogue {
	c := &Catalogue{}
	for _, f := range floors {
		c.rows = append(c.rows, Threshold{
			GPUModel: f.GPUModel, Interconnect: Interconnect(f.Interconnect), GPUs: f.GPUs,
			Collective: f.Collective, MinBusBWGBps: f.Threshold.BusBWGBps, MessageBytes: f.Threshold.MessageBytes(),
			Platform: f.Threshold.Platform, Source: strings.Join(f.Threshold.Sources, " ; "),
		})
	}
	return c
}

// Rows returns every floor in the catalogue.
func (c *Catalogue) Rows() []Threshold { return append([]Threshold(nil), c.rows...) }

// Lookup finds the floor for a GPU model (a key such as "H100" or a driver
// name such as "NVIDIA H100 80GB HBM3"), interconnect, GPU count (0 = any)
// and collective ("" = all_reduce).
func (c *Catalogue) Lookup(model string, ic Interconnect, gpus int, collective string) (Threshold, bool) {
	key := compat.ModelKey(model)
	if collective == "" {
		collective = "all_reduce"
	}
	for _, t := range c.rows {
		if t.GPUModel == key && t.Interconnect == ic && t.Collective == collective && (gpus == 0 || gpus == t.GPUs) {
			return t, true
		}
	}
	return Threshold{}, false
}
