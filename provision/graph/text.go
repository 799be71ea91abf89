package graph

import (
	"fmt"
	"io"
	"strings"
)

// legend is nvidia-smi topo -m's legend, shortened.
const legend = "X self · NV# NVLink (# bonded links) · PIX one PCIe switch · PXB several PCIe bridges · PHB a host bridge · NODE host bridges in one NUMA node · SYS across sockets"

// WriteText writes each picture as a header, a `nvidia-smi topo -m`-style
// matrix of GPUs and NICs, the tree from CPU sockets down to the devices,
// the GPU–NIC pairs and the problems.
func WriteText(w io.Writer, pics []Picture) error {
	var b strings.Builder
	for i, p := range pics {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s\n\n", p.Heading())
		writeText(&b, p.Topology)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeText writes one topology, without the hosts that share it.
func writeText(b *strings.Builder, t *Topology) {
	fmt.Fprintf(b, "%s (from %s)\n\n", t.Title, t.Source)
	writeMatrix(b, t.Matrix)
	writeTree(b, t)
	if f := t.Fabric; f != nil {
		var names []string
		for _, id := range f.Members {
			if bx := t.box(id); bx != nil {
				names = append(names, bx.Label)
			}
		}
		fmt.Fprintf(b, "\n%s", f.Label)
		for _, d := range f.Detail {
			fmt.Fprintf(b, " · %s", d)
		}
		fmt.Fprintf(b, ": %s\n", strings.Join(names, " "))
	}
	if len(t.Pairs) > 0 {
		title := "GPU–NIC (nearest RDMA NIC)"
		if t.Pairs[0].Declared {
			title = "GPU–NIC (affinity)"
		}
		fmt.Fprintf(b, "\n%s:", title)
		for i, p := range t.Pairs {
			if i%4 == 0 {
				b.WriteString("\n ")
			}
			fmt.Fprintf(b, " %s→%s %s", t.box(p.GPU).Label, t.box(p.NIC).Label, p.Level)
		}
		b.WriteString("\n")
	}
	if len(t.Problems) == 0 {
		b.WriteString("\nNo problems seen.\n")
		return
	}
	fmt.Fprintf(b, "\nProblems (%d):\n", len(t.Problems))
	for _, p := range t.Problems {
		fmt.Fprintf(b, "  ! %s\n", p.Text)
	}
}

func writeMatrix(b *strings.Builder, m Matrix) {
	if len(m.Names) == 0 {
		b.WriteString("No GPUs or NICs.\n\n")
		return
	}
	width := 4
	for _, n := range m.Names {
		width = max(width, len(n))
	}
	cell := func(s string) { fmt.Fprintf(b, " %-*s", width, s) }
	b.WriteString(strings.Repeat(" ", width))
	for _, n := range m.Names {
		cell(n)
	}
	b.WriteString(" NUMA\n")
	for i, n := range m.Names {
		fmt.Fprintf(b, "%-*s", width, n)
		for _, c := range m.Cells[i] {
			cell(c)
		}
		numa := "N/A"
		if m.NUMA[i] >= 0 {
			numa = fmt.Sprint(m.NUMA[i])
		}
		fmt.Fprintf(b, " %s\n", numa)
	}
	b.WriteString("\n")
	if len(m.Legend) > 0 {
		b.WriteString(strings.Join(m.Legend, "  ") + "\n")
	}
	b.WriteString(legend + "\n\n")
}

func writeTree(b *strings.Builder, t *Topology) {
	children := map[string][]*Box{}
	var roots []*Box
	for i := range t.Boxes {
		bx := &t.Boxes[i]
		if bx.Parent == "" || t.box(bx.Parent) == nil {
			roots = append(roots, bx)
			continue
		}
		children[bx.Parent] = append(children[bx.Parent], bx)
	}
	var walk func(bx *Box, prefix string, last, top bool)
	walk = func(bx *Box, prefix string, last, top bool) {
		line, next := prefix, prefix
		if !top {
			if last {
				line += "└─ "
				next += "   "
			} else {
				line += "├─ "
				next += "│  "
			}
		}
		b.WriteString(line + boxLine(bx) + "\n")
		kids := children[bx.ID]
		for i, k := range kids {
			walk(k, next, i == len(kids)-1, false)
		}
	}
	for _, r := range roots {
		walk(r, "", true, true)
	}
}

// boxLine is a box on one line: label, details, link, marks.
func boxLine(bx *Box) string {
	parts := append([]string{bx.Label}, bx.Detail...)
	if bx.Link != nil {
		parts = append(parts, bx.Link.String())
	}
	s := strings.Join(parts, " · ")
	if bx.Missing {
		s += "  [MISSING]"
	} else if bx.Problem {
		s += "  [!]"
	}
	return s
}
