package graph

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// Kind is what a box in the picture stands for.
type Kind string

// Kinds of boxes, from the CPU down to the devices.
const (
	// KindSocket is a CPU socket (package).
	KindSocket Kind = "socket"
	// KindNUMA is a NUMA node: memory and the CPUs closest to it.
	KindNUMA Kind = "numa"
	// KindRootPort is a PCIe root port of the CPU's host bridge.
	KindRootPort Kind = "rootport"
	// KindSwitch is a PCIe switch.
	KindSwitch Kind = "switch"
	// KindGPU is a GPU.
	KindGPU Kind = "gpu"
	// KindNIC is a network adapter port.
	KindNIC Kind = "nic"
	// KindNVMe is an NVMe controller: the storage end of the data path.
	KindNVMe Kind = "nvme"
)

// Source says where a Topology came from.
type Source string

// Sources of a Topology.
const (
	// SourceFacts is a node as the facts probe read it.
	SourceFacts Source = "facts"
	// SourceSpec is a node as the spec's hardware value describes it.
	SourceSpec Source = "spec"
)

// Box is one device or bridge of the picture.
type Box struct {
	// ID is unique within the Topology and stable across runs.
	ID string
	// Kind is what the box stands for.
	Kind Kind
	// Label is the first line: the device's name.
	Label string
	// Address is the PCI address of a device, "" when not known.
	Address string
	// Detail are further lines (model, address, link, rate).
	Detail []string
	// Noted are the lines of Detail the picture draws in red although no
	// Problem concerns them: a NIC port down, or slower than the node's
	// other ports of its link layer. Only the rails a spec names are
	// judged (provision/niclink); any other port's state is shown, and
	// the picture's legend says it was not judged.
	Noted []string
	// Parent is the ID of the box above it in the tree; "" for a socket.
	Parent string
	// Link is the PCIe link to its parent, nil when not known.
	Link *Link
	// Missing is true for a device the hardware declares but the facts
	// lack: it is drawn so that its absence shows.
	Missing bool
	// Problem is true when a Problem concerns this box.
	Problem bool
}

// Link is a PCIe link: its negotiated and maximum generation and width.
type Link struct {
	// Gen and Width are the negotiated generation and lane count.
	Gen, Width int
	// MaxGen and MaxWidth are what both ends support.
	MaxGen, MaxWidth int
}

// Degraded reports a link trained below its maximum speed or width.
func (l Link) Degraded() bool {
	return (l.MaxGen > 0 && l.Gen < l.MaxGen) || (l.MaxWidth > 0 && l.Width < l.MaxWidth)
}

// String writes the link as "Gen5 x16", with the maximum when below it.
func (l Link) String() string {
	s := genWidth(l.Gen, l.Width)
	if l.Degraded() {
		s += " (max " + genWidth(l.MaxGen, l.MaxWidth) + ")"
	}
	return s
}

func genWidth(gen, width int) string {
	g, w := "Gen?", "x?"
	if gen > 0 {
		g = fmt.Sprintf("Gen%d", gen)
	}
	if width > 0 {
		w = fmt.Sprintf("x%d", width)
	}
	return g + " " + w
}

// Fabric is the NVLink domain joining GPUs.
type Fabric struct {
	// Label names it ("NVLink · 4× NVSwitch").
	Label string
	// Detail are further lines (the NVSwitch addresses).
	Detail []string
	// Members are the IDs of the GPUs it joins.
	Members []string
	// AllToAll is true when every member reaches every other directly
	// (NVSwitch), so the matrix shows NV between each pair.
	AllToAll bool
}

// Pair is a GPU and the NIC its traffic leaves by.
type Pair struct {
	// GPU and NIC are box IDs.
	GPU, NIC string
	// Level is where their PCIe paths meet, as nvidia-smi topo -m names it.
	Level nvmlfacts.Level
	// Declared is true when the spec's affinity block made the pair, false
	// when it is the GPU's nearest NIC.
	Declared bool
}

// ProblemKind names a class of problem.
type ProblemKind string

// Problems the picture marks.
const (
	// ProblemLink is a PCIe link below its maximum.
	ProblemLink ProblemKind = "link_degraded"
	// ProblemCrossSocket is a GPU whose NIC is across the SMP interconnect.
	ProblemCrossSocket ProblemKind = "gpu_nic_sys"
	// ProblemNUMABind is a numa bind that disagrees with the hardware.
	ProblemNUMABind ProblemKind = "numa_bind"
	// ProblemMissing is a declared device absent from the node.
	ProblemMissing ProblemKind = "missing_device"
	// ProblemNICLink is a compute rail's port that is down, not linked
	// up, on another link layer, or slower than the hardware declares
	// (verify's nic.link judges the same).
	ProblemNICLink ProblemKind = "nic_link"
)

// Problem is one thing wrong, tied to the box it is about.
type Problem struct {
	// Kind classifies it.
	Kind ProblemKind
	// Box is the ID of the box it concerns.
	Box string
	// Text says what is wrong and what to do.
	Text string
}

// Topology is one node's picture.
type Topology struct {
	// Title names the machine (the hardware's name, or the CPU model).
	Title string
	// Source says whether facts or the spec drew it.
	Source Source
	// Boxes are in tree order: every parent before its children.
	Boxes []Box
	// Fabric is the NVLink domain, nil when the GPUs have none.
	Fabric *Fabric
	// Pairs are the GPU–NIC pairs.
	Pairs []Pair
	// Matrix is the `nvidia-smi topo -m`-style matrix over GPUs and NICs.
	Matrix Matrix
	// Problems are sorted by box order.
	Problems []Problem
}

// Matrix is a square table of how devices meet.
type Matrix struct {
	// Names are the row and column heads ("GPU0", "NIC0").
	Names []string
	// Boxes are the box IDs of the rows.
	Boxes []string
	// Cells[i][j] is "X", "NV", or a level (PIX … SYS).
	Cells [][]string
	// NUMA is each row's NUMA node, -1 when unknown.
	NUMA []int
	// Legend maps NIC heads to their device names ("NIC0: mlx5_0").
	Legend []string
}

// box returns the box with the given ID.
func (t *Topology) box(id string) *Box {
	for i := range t.Boxes {
		if t.Boxes[i].ID == id {
			return &t.Boxes[i]
		}
	}
	return nil
}

// hasProblem reports whether a problem of kind concerns box id.
func (t *Topology) hasProblem(id string, kind ProblemKind) bool {
	for _, p := range t.Problems {
		if p.Box == id && p.Kind == kind {
			return true
		}
	}
	return false
}

// problem records p and marks its box.
func (t *Topology) problem(kind ProblemKind, id, format string, args ...any) {
	t.Problems = append(t.Problems, Problem{Kind: kind, Box: id, Text: fmt.Sprintf(format, args...)})
	if b := t.box(id); b != nil {
		b.Problem = true
	}
}

// sortProblems orders problems by their box's place in the tree, so the
// list reads top to bottom like the picture.
func (t *Topology) sortProblems() {
	order := map[string]int{}
	for i, b := range t.Boxes {
		order[b.ID] = i
	}
	out := make([]Problem, 0, len(t.Problems))
	for i := range t.Boxes {
		for _, p := range t.Problems {
			if order[p.Box] == i {
				out = append(out, p)
			}
		}
	}
	for _, p := range t.Problems {
		if _, ok := order[p.Box]; !ok {
			out = append(out, p)
		}
	}
	t.Problems = out
}

// Signature is the topology as the picture shows it, so that hosts whose
// pictures would be the same share one.
func (t *Topology) Signature() string {
	var b strings.Builder
	writeText(&b, t)
	return b.String()
}

// socketOf spreads NUMA nodes that have CPUs evenly over the sockets in
// order, which is how the kernel numbers them on the platforms gpuform knows
// (one node per socket, or NPS2/NPS4 and SNC splitting each socket into
// consecutive nodes); sysfs has no direct NUMA-to-socket link.
func socketOf(i, nodes, sockets int) int {
	if nodes <= 0 || sockets <= 1 {
		return 0
	}
	return i * sockets / nodes
}
