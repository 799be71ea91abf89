package compat

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// NCCLFloor is one row of nccl-floors.tsv: the published floor that
// verify judges a GPU model × interconnect × GPU count × collective by.
// The index holds no numbers of its own; Threshold is the kind = "floor"
// row of nccl-thresholds.tsv it names, with the number and its source.
type NCCLFloor struct {
	// GPUModel is the model key (see ModelKey), e.g. "H100".
	GPUModel string
	// Interconnect is verify's interconnect name ("nvswitch",
	// "nvlink_bridge").
	Interconnect string
	// GPUs is the GPU count of the measured system.
	GPUs int
	// Collective is the nccl-tests collective, e.g. "all_reduce".
	Collective string
	// Threshold is the floor row the index points at.
	Threshold NCCLThreshold
}

func (kb *KB) loadFloors() error {
	t, err := readTable(kb.fsys, "data/nccl-floors.tsv", "gpu_model", "interconnect", "gpus", "collective", "platform")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		var floor *NCCLThreshold
		for i, th := range kb.nccltest {
			if th.Platform == r.get("platform") && th.Kind == "floor" {
				floor = &kb.nccltest[i]
			}
		}
		if floor == nil {
			return r.errorf("no floor row for platform %q in nccl-thresholds.tsv", r.get("platform"))
		}
		gpus, err := strconv.Atoi(r.get("gpus"))
		if err != nil {
			return r.errorf("gpus %q: %v", r.get("gpus"), err)
		}
		kb.floors = append(kb.floors, NCCLFloor{
			GPUModel: r.get("gpu_model"), Interconnect: r.get("interconnect"), GPUs: gpus,
			Collective: r.get("collective"), Threshold: *floor,
		})
	}
	return nil
}

// NCCLFloors returns every row of nccl-floors.tsv with its floor.
func (kb *KB) NCCLFloors() []NCCLFloor {
	return append([]NCCLFloor(nil), kb.floors...)
}

var messageSizeRE = regexp.MustCompile(`^(\d+)([KMG])\b`)

// MessageBytes is the message size the threshold was measured at, read
// from sizes such as "16G (single size)" or "8G"; 0 when the source does
// not say.
func (t NCCLThreshold) MessageBytes() int64 {
	m := messageSizeRE.FindStringSubmatch(strings.TrimSpace(t.MessageSize))
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n << map[string]uint{"K": 10, "M": 20, "G": 30}[m[2]]
}

// ModelKey reduces a GPU name to the model key the NCCL tables use:
// "NVIDIA H100 80GB HBM3" → "H100", "NVIDIA A100-SXM4-40GB" → "A100",
// "A100 SXM4 80GB" → "A100", "NVIDIA L40S" → "L40S". Unknown names are
// returned upper-cased and trimmed.
func ModelKey(name string) string {
	tokens := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool {
		return (r < 'A' || r > 'Z') && (r < '0' || r > '9')
	})
	// Whole tokens only, so that "L40S" is not read as "L4", nor "A100" as "A10".
	for _, k := range []string{"GB200", "GB300", "GH200", "B200", "B300", "H200", "H100", "A100", "A10", "V100", "L40S", "L40", "L4"} {
		if slices.Contains(tokens, k) {
			return k
		}
	}
	return strings.TrimSpace(strings.ToUpper(name))
}
