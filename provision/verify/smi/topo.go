package smi

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// TopoCommand is the command line whose output ParseTopo reads.
const TopoCommand = "nvidia-smi topo -m"

// Topology is one `nvidia-smi topo -m` (or `topo -mp`) matrix: the link
// between every GPU pair and every GPU–NIC pair, and each GPU's CPU and
// NUMA affinity.
type Topology struct {
	// GPUs are the GPU rows, in the order printed.
	GPUs []TopoGPU
	// NICs are the NIC names in column order: the NIC Legend's names
	// (mlx5_0) where there is one, else the header's (older drivers print
	// mlx5_0 as the column name).
	NICs []string
	// GPUPairs holds every GPU pair once, A < B.
	GPUPairs []nvmlfacts.GPUPair
	// NICPairs holds every GPU with every NIC.
	NICPairs []nvmlfacts.NICPair
	// Warnings lists cells that could not be read (a level this parser
	// does not know); the pair is left out.
	Warnings []string
}

// TopoGPU is one GPU row's affinity columns.
type TopoGPU struct {
	// Index is N of "GPUN", the NVML index.
	Index int
	// CPUAffinity is the "CPU Affinity" cpulist ("0-55,112-167"); "" when
	// empty or N/A.
	CPUAffinity string
	// NUMA is the "NUMA Affinity" node; nil when N/A, empty or a range.
	NUMA *int
	// GPUNUMAID is the "GPU NUMA ID" column (the GPU's own memory node on
	// coherent platforms such as Grace Hopper); nil when N/A or absent.
	GPUNUMAID *int
}

// ansi matches the terminal escape sequences nvidia-smi writes around the
// header row when its stdout is a terminal (underline on and off).
var ansi = lazyre.New("\x1b\\[[0-9;]*[A-Za-z]")

var (
	gpuName = lazyre.New(`^GPU([0-9]+)$`)
	nvLinks = lazyre.New(`^NV([0-9]+)$`)
	nicLeg  = lazyre.New(`^(NIC[0-9]+):\s*(\S+)$`)
)

// trailing returns the affinity columns after the device columns, in the
// order nvidia-smi prints them; older drivers print fewer.
func trailing() []string { return []string{"CPU Affinity", "NUMA Affinity", "GPU NUMA ID"} }

// ParseTopo reads `nvidia-smi topo -m` output: tab-separated (as
// nvidia-smi writes it) or with tabs expanded to spaces (as copied into
// documents), with or without terminal escapes, with or without the NIC
// Legend and the "GPU NUMA ID" column of newer drivers, and with the SOC
// level older drivers printed for what is now SYS.
func ParseTopo(data []byte) (*Topology, error) {
	lines := strings.Split(strings.ReplaceAll(ansi.ReplaceAllString(string(data), ""), "\r\n", "\n"), "\n")
	head := -1
	for i, l := range lines {
		// The header starts with GPU0; so does GPU0's row, whose next
		// cell is X (Self).
		if f := strings.Fields(l); len(f) > 1 && f[0] == "GPU0" && f[1] != "X" {
			head = i
			break
		}
	}
	if head < 0 {
		return nil, fmt.Errorf("parsing %s output: no header row starting with GPU0", TopoCommand)
	}
	header := lines[head]
	tabbed := strings.Contains(header, "\t")
	devCols := header
	if i := strings.Index(header, trailing()[0]); i >= 0 {
		devCols = header[:i]
	}
	devices := strings.Fields(devCols)
	var extra []string
	for _, c := range trailing() {
		if strings.Contains(header, c) {
			extra = append(extra, c)
		}
	}
	t := &Topology{}
	legend := map[string]string{}
	for _, l := range lines[head+1:] {
		if m := nicLeg.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			legend[m[1]] = m[2]
		}
	}
	col := map[string]int{}
	for i, d := range devices {
		col[d] = i
		if !gpuName.MatchString(d) {
			t.NICs = append(t.NICs, cmpOr(legend[d], d))
		}
	}
	nicName := func(d string) string { return cmpOr(legend[d], d) }
	seen := map[int]bool{}
	for _, l := range lines[head+1:] {
		var cells []string
		if tabbed && strings.Contains(l, "\t") {
			cells = strings.Split(l, "\t")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
		} else {
			cells = strings.Fields(l)
		}
		if len(cells) == 0 {
			continue
		}
		if strings.HasPrefix(cells[0], "Legend") {
			break
		}
		m := gpuName.FindStringSubmatch(cells[0])
		if m == nil {
			continue // a NIC row: its GPU cells repeat the GPU rows'
		}
		idx, _ := strconv.Atoi(m[1])
		if seen[idx] {
			return nil, fmt.Errorf("parsing %s output: GPU%d has two rows", TopoCommand, idx)
		}
		seen[idx] = true
		if len(cells)-1 < len(devices) {
			return nil, fmt.Errorf("parsing %s output: GPU%d row has %d cells, the header %d devices", TopoCommand, idx, len(cells)-1, len(devices))
		}
		links := cells[1 : 1+len(devices)]
		g := TopoGPU{Index: idx}
		g.CPUAffinity, g.NUMA, g.GPUNUMAID = affinity(cells[1+len(devices):], extra)
		// shifted is set at the first cell that is no link: two cells run
		// together (a copy that lost a tab) move every later cell one
		// column left, so nothing after it is read as its header says.
		shifted := false
		for j, d := range devices {
			cell := links[j]
			if cell == "X" {
				continue
			}
			if shifted {
				t.Warnings = append(t.Warnings, fmt.Sprintf("GPU%d–%s: not read, the row's cells after an unreadable one may be shifted", idx, nicName(d)))
				continue
			}
			lvl, nv, ok := level(cell)
			if !ok {
				t.Warnings = append(t.Warnings, fmt.Sprintf("GPU%d–%s: unknown link %q", idx, nicName(d), cell))
				if tabbed {
					shifted = true
					g.CPUAffinity, g.NUMA, g.GPUNUMAID = "", nil, nil
					t.Warnings = append(t.Warnings, fmt.Sprintf("GPU%d: CPU and NUMA affinity not read, the row's cells may be shifted", idx))
				}
				continue
			}
			if gm := gpuName.FindStringSubmatch(d); gm != nil {
				other, _ := strconv.Atoi(gm[1])
				if other > idx {
					t.GPUPairs = append(t.GPUPairs, nvmlfacts.GPUPair{A: idx, B: other, Level: lvl, NVLinks: nv})
				}
				continue
			}
			if nv > 0 {
				t.Warnings = append(t.Warnings, fmt.Sprintf("GPU%d–%s: NVLink to a NIC (%q)", idx, nicName(d), cell))
				continue
			}
			t.NICPairs = append(t.NICPairs, nvmlfacts.NICPair{GPU: idx, NIC: nicName(d), Level: lvl})
		}
		t.GPUs = append(t.GPUs, g)
	}
	if len(t.GPUs) == 0 {
		return nil, fmt.Errorf("parsing %s output: no GPU rows", TopoCommand)
	}
	slices.SortFunc(t.GPUPairs, func(a, b nvmlfacts.GPUPair) int { return cmpInts(a.A, b.A, a.B, b.B) })
	return t, nil
}

// level reads one matrix cell: a PCIe level or NV# (a bonded set of #
// NVLinks, where the PCIe path is not shown).
func level(cell string) (nvmlfacts.Level, int, bool) {
	if m := nvLinks.FindStringSubmatch(cell); m != nil {
		n, err := strconv.Atoi(m[1])
		return "", n, err == nil && n > 0
	}
	if cell == "SOC" {
		// Drivers before the NODE level (R384) named the SMP link SOC.
		return nvmlfacts.LevelSys, 0, true
	}
	l, err := nvmlfacts.ParseLevel(cell)
	if err != nil || l == nvmlfacts.LevelInternal {
		return "", 0, false
	}
	return l, 0, true
}

// affinity reads the cells after the device columns. Tab-separated output
// pads "NUMA Affinity" with an empty cell before "GPU NUMA ID", and an
// empty CPU Affinity stays an empty cell; with tabs expanded an empty cell
// cannot be told apart, so the values are taken in order.
func affinity(cells, names []string) (cpus string, numa, gpuNUMA *int) {
	var vals []string
	for i, c := range cells {
		// Keep the first two positions (CPU, NUMA) even when empty.
		if i < 2 || c != "" {
			vals = append(vals, c)
		}
	}
	get := func(name string) string {
		i := slices.Index(names, name)
		if i < 0 || i >= len(vals) {
			return ""
		}
		return vals[i]
	}
	cpus = get(trailing()[0])
	if cpus == "N/A" {
		cpus = ""
	}
	return cpus, atoiPtr(get(trailing()[1])), atoiPtr(get(trailing()[2]))
}

func atoiPtr(s string) *int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return nil
	}
	return &n
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func cmpInts(a1, b1, a2, b2 int) int {
	if a1 != b1 {
		return a1 - b1
	}
	return a2 - b2
}

// Apply puts t into rep, a report parsed from `nvidia-smi -q -x`: the GPU
// pair and GPU–NIC levels, each GPU's CPU affinity and NUMA node, so the
// topology and NUMA checks judge on the fallback path too.
func (t *Topology) Apply(rep *nvmlfacts.Report) {
	rep.GPUTopology = t.GPUPairs
	rep.NICTopology = t.NICPairs
	for _, tg := range t.GPUs {
		g := rep.GPUByIndex(tg.Index)
		if g == nil {
			continue
		}
		if g.CPUAffinity == "" {
			g.CPUAffinity = tg.CPUAffinity
		}
		if g.NUMANode == nil {
			g.NUMANode = tg.NUMA
			if g.NUMANode == nil {
				// Coherent platforms print N/A as NUMA affinity and the
				// GPU's own node, as NVML's GetNumaNodeId answers there.
				g.NUMANode = tg.GPUNUMAID
			}
		}
	}
	rep.NotCollected = slices.DeleteFunc(rep.NotCollected, func(f string) bool {
		return f == nvmlfacts.FactTopology || f == nvmlfacts.FactNUMA
	})
	for _, w := range t.Warnings {
		rep.Warnings = append(rep.Warnings, TopoCommand+": "+w)
	}
}
