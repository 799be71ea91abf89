package kb

import (
	"slices"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/spec"
)

// NCCLFloor is one row of nccl-floors.tsv (one node) or
// nccl-multinode-floors.tsv (a run across nodes): the published floor that
// verify judges a GPU model × interconnect × GPU count × collective — and,
// across nodes, × node count × network — by. The indexes hold no numbers
// of their own; Threshold is the kind = "floor" row of nccl-thresholds.tsv
// they name, with the number and its source.
type NCCLFloor struct {
	// GPUModel is the model key (see ModelKey), e.g. "H100".
	GPUModel string
	// Interconnect is verify's interconnect name ("nvswitch",
	// "nvlink_bridge"); empty for multi-node floors, which the network
	// between the nodes bounds.
	Interconnect string
	// GPUs is the GPU count of one node of the measured system.
	GPUs int
	// Nodes is the node count of the measured run: 1 for nccl-floors.tsv.
	Nodes int
	// MinNodes is true when the floor holds for Nodes or more nodes
	// ("2+": the source runs on every node it finds).
	MinNodes bool
	// Network is the fabric between the nodes (spec.NCCLNetworks); empty for
	// single-node floors.
	Network string
	// Collective is the nccl-tests collective, e.g. "all_reduce".
	Collective string
	// Threshold is the floor row the index points at.
	Threshold NCCLThreshold
}

// MultiNode reports whether the floor is for a run across nodes.
func (f NCCLFloor) MultiNode() bool { return f.Nodes > 1 }

func (kb *KB) floorRow(r row) (*NCCLThreshold, error) {
	for i, th := range kb.nccltest {
		if th.Platform == r.get("platform") && th.Kind == "floor" {
			return &kb.nccltest[i], nil
		}
	}
	return nil, r.errorf("no floor row for platform %q in nccl-thresholds.tsv", r.get("platform"))
}

func (kb *KB) loadFloors() error {
	t, err := readTable(kb.fsys, "data/nccl-floors.tsv", "gpu_model", "interconnect", "gpus", "collective", "platform")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		floor, err := kb.floorRow(r)
		if err != nil {
			return err
		}
		gpus, err := strconv.Atoi(r.get("gpus"))
		if err != nil {
			return r.errorf("gpus %q: %v", r.get("gpus"), err)
		}
		kb.floors = append(kb.floors, NCCLFloor{
			GPUModel: r.get("gpu_model"), Interconnect: r.get("interconnect"), GPUs: gpus, Nodes: 1,
			Collective: r.get("collective"), Threshold: *floor,
		})
	}
	return kb.loadMultiNodeFloors()
}

func (kb *KB) loadMultiNodeFloors() error {
	t, err := readTable(kb.fsys, "data/nccl-multinode-floors.tsv", "gpu_model", "gpus_per_node", "nodes", "network", "collective", "platform")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		floor, err := kb.floorRow(r)
		if err != nil {
			return err
		}
		gpus, err := strconv.Atoi(r.get("gpus_per_node"))
		if err != nil || gpus < 1 {
			return r.errorf("gpus_per_node %q: want a positive number", r.get("gpus_per_node"))
		}
		nodesCell, atLeast := strings.CutSuffix(r.get("nodes"), "+")
		nodes, err := strconv.Atoi(nodesCell)
		if err != nil || nodes < 2 {
			return r.errorf("nodes %q: want 2 or more, or N+ for at least N", r.get("nodes"))
		}
		if !slices.Contains(spec.NCCLNetworks(), r.get("network")) {
			return r.errorf("network %q: want one of %s", r.get("network"), strings.Join(spec.NCCLNetworks(), ", "))
		}
		if floor.MessageBytes() <= 0 {
			if _, _, ok := floor.AvgRange(); !ok {
				return r.errorf("floor row %q says neither the message size nor the sweep its number was read at", floor.Platform)
			}
		}
		kb.floors = append(kb.floors, NCCLFloor{
			GPUModel: r.get("gpu_model"), GPUs: gpus, Nodes: nodes, MinNodes: atLeast, Network: r.get("network"),
			Collective: r.get("collective"), Threshold: *floor,
		})
	}
	return nil
}

// NCCLFloors returns every row of nccl-floors.tsv with its floor.
func (kb *KB) NCCLFloors() []NCCLFloor {
	return append([]NCCLFloor(nil), kb.floors...)
}

var (
	messageSizeRE = lazyre.New(`^(\d+)([KMG])\b`)
	avgRangeRE    = lazyre.New(`^(\d+)([KMG])-(\d+)([KMG]) sweep, Avg bus bandwidth`)
)

// MessageBytes is the message size the threshold was measured at, read
// from sizes such as "16G (single size)" or "8G"; 0 when the source does
// not say, or when the number is an average over a sweep (see AvgRange).
func (t NCCLThreshold) MessageBytes() int64 {
	if _, _, ok := t.AvgRange(); ok {
		return 0
	}
	m := messageSizeRE.FindStringSubmatch(strings.TrimSpace(t.MessageSize))
	if m == nil {
		return 0
	}
	return sizeBytes(m[1], m[2])
}

// AvgRange is the sweep whose "Avg bus bandwidth" the threshold's number
// is, for sizes such as "2G-8G sweep, Avg bus bandwidth": nccl-tests
// averages the out-of-place and in-place busbw of every size from lo to
// hi. ok is false for a number read at one size.
func (t NCCLThreshold) AvgRange() (lo, hi int64, ok bool) {
	m := avgRangeRE.FindStringSubmatch(strings.TrimSpace(t.MessageSize))
	if m == nil {
		return 0, 0, false
	}
	return sizeBytes(m[1], m[2]), sizeBytes(m[3], m[4]), true
}

func sizeBytes(n, unit string) int64 {
	v, _ := strconv.ParseInt(n, 10, 64)
	return v << map[string]uint{"K": 10, "M": 20, "G": 30}[unit]
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
