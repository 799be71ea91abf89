package nvmlfacts

import "fmt"

// Level is a topology common ancestor, named as `nvidia-smi topo -m` names it.
type Level string

// Topology levels from closest to farthest. The names and meanings are
// nvidia-smi's legend (printed by `nvidia-smi topo -m`; see the real
// captures in provision/verify/smi/testdata/topo/);
// NVML's GpuTopologyLevel values map onto them one to one.
const (
	// LevelInternal is two devices on the same board (NVML TOPOLOGY_INTERNAL).
	LevelInternal Level = "INTERNAL"
	// LevelPIX is a path through at most a single PCIe bridge.
	LevelPIX Level = "PIX"
	// LevelPXB is a path through multiple PCIe bridges, no host bridge.
	LevelPXB Level = "PXB"
	// LevelPHB is a path through a PCIe host bridge (the CPU).
	LevelPHB Level = "PHB"
	// LevelNode is a path between host bridges inside one NUMA node.
	LevelNode Level = "NODE"
	// LevelSys is a path across the SMP interconnect between NUMA nodes.
	LevelSys Level = "SYS"
)

// Rank orders levels from closest (0) to farthest (5); unknown levels rank 6.
func (l Level) Rank() int {
	switch l {
	case LevelInternal:
		return 0
	case LevelPIX:
		return 1
	case LevelPXB:
		return 2
	case LevelPHB:
		return 3
	case LevelNode:
		return 4
	case LevelSys:
		return 5
	}
	return 6
}

// ParseLevel accepts a level name as written in specs or by nvidia-smi.
func ParseLevel(s string) (Level, error) {
	l := Level(s)
	if l.Rank() > 5 {
		return "", fmt.Errorf("unknown topology level %q (want one of INTERNAL, PIX, PXB, PHB, NODE, SYS)", s)
	}
	return l, nil
}
