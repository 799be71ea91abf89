package graph

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// Colours of the picture: one fill per kind, red for problems.
const (
	colourProblem = "#d62728"
	colourNVLink  = "#2ca02c"
	colourPair    = "#1f77b4"
)

// fill is the background of a box of kind k.
func fill(k Kind) string {
	switch k {
	case KindSocket:
		return "#dbe9f6"
	case KindNUMA:
		return "#eef4fb"
	case KindRootPort:
		return "#f2f2f2"
	case KindSwitch:
		return "#e6e6e6"
	case KindGPU:
		return "#d9f0d3"
	case KindNIC:
		return "#fde9c9"
	case KindNVMe:
		return "#e8dff5"
	}
	return "#ffffff"
}

// WriteDOT writes the pictures as one Graphviz digraph, a cluster per
// picture, read top to bottom along the data path: CPU socket and NUMA
// memory, PCIe root port and switches, GPU, NVLink, and the NIC each GPU
// sends through (dashed).
func WriteDOT(w io.Writer, pics []Picture) error {
	var b strings.Builder
	b.WriteString("digraph gpuform {\n")
	b.WriteString("  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=12, labelloc=t, nodesep=0.25, ranksep=0.45];\n")
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10, fillcolor=\"#ffffff\"];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=9, color=\"#666666\"];\n")
	for i, p := range pics {
		writeCluster(&b, fmt.Sprintf("p%d", i), p)
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeCluster(b *strings.Builder, prefix string, p Picture) {
	t := p.Topology
	id := func(s string) string { return quote(prefix + "/" + s) }
	fmt.Fprintf(b, "  subgraph %s {\n", quote("cluster_"+prefix))
	fmt.Fprintf(b, "    label=%s;\n", label(p.Heading(), t.Title+" (from "+string(t.Source)+")"))
	b.WriteString("    style=rounded; color=\"#999999\";\n")
	for _, bx := range t.Boxes {
		lines := append([]string{bx.Label}, bx.Detail...)
		attrs := []string{"label=" + label(lines...), "fillcolor=" + quote(fill(bx.Kind))}
		if bx.Kind == KindSocket || bx.Kind == KindNUMA {
			attrs = append(attrs, "shape=box3d")
		}
		if bx.Missing {
			attrs = append(attrs, "style=\"rounded,dashed\"", "fillcolor=\"#ffffff\"")
		}
		if bx.Problem || bx.Missing {
			attrs = append(attrs, "color="+quote(colourProblem), "penwidth=2", "fontcolor="+quote(colourProblem))
		}
		fmt.Fprintf(b, "    %s [%s];\n", id(bx.ID), strings.Join(attrs, ", "))
	}
	// Sockets left to right in number order: dot would otherwise place
	// them wherever the edges below them fit best.
	var sockets []string
	for _, bx := range t.Boxes {
		if bx.Kind == KindSocket {
			sockets = append(sockets, id(bx.ID))
		}
	}
	if len(sockets) > 1 {
		fmt.Fprintf(b, "    { rank=same; %s [style=invis]; }\n", strings.Join(sockets, " -> "))
	}
	for _, bx := range t.Boxes {
		if bx.Parent == "" || t.box(bx.Parent) == nil {
			continue
		}
		var attrs []string
		if bx.Link != nil {
			attrs = append(attrs, "label="+label(bx.Link.String()))
			// Red only when it is a problem: an idle GPU's lower
			// generation at full width is power saving, drawn as read.
			if t.hasProblem(bx.ID, ProblemLink) {
				attrs = append(attrs, "color="+quote(colourProblem), "fontcolor="+quote(colourProblem), "penwidth=2")
			}
		}
		if bx.Missing {
			attrs = append(attrs, "style=dashed", "color="+quote(colourProblem))
		}
		fmt.Fprintf(b, "    %s -> %s%s;\n", id(bx.Parent), id(bx.ID), attrList(attrs))
	}
	if f := t.Fabric; f != nil {
		fmt.Fprintf(b, "    %s [label=%s, shape=hexagon, fillcolor=\"#c7e9c0\", color=%s];\n", id("fabric"), label(append([]string{f.Label}, f.Detail...)...), quote(colourNVLink))
		for _, m := range f.Members {
			fmt.Fprintf(b, "    %s -> %s [dir=none, color=%s, penwidth=2];\n", id(m), id("fabric"), quote(colourNVLink))
		}
	}
	for _, pr := range t.Pairs {
		attrs := []string{"style=dashed", "label=" + label(string(pr.Level)), "color=" + quote(colourPair), "fontcolor=" + quote(colourPair)}
		if pr.Level == nvmlfacts.LevelSys {
			attrs = append(attrs, "color="+quote(colourProblem), "fontcolor="+quote(colourProblem), "penwidth=2")
		}
		fmt.Fprintf(b, "    %s -> %s%s;\n", id(pr.GPU), id(pr.NIC), attrList(attrs))
	}
	if len(t.Problems) > 0 {
		lines := []string{fmt.Sprintf("Problems (%d)", len(t.Problems))}
		for _, pr := range t.Problems {
			lines = append(lines, "! "+pr.Text)
		}
		fmt.Fprintf(b, "    %s [label=%s, shape=note, fillcolor=\"#fdecea\", color=%s, fontcolor=%s];\n", id("problems"), leftLabel(lines...), quote(colourProblem), quote(colourProblem))
	}
	b.WriteString("  }\n")
}

func attrList(attrs []string) string {
	if len(attrs) == 0 {
		return ""
	}
	return " [" + strings.Join(attrs, ", ") + "]"
}

// quote writes s as a DOT double-quoted ID.
func quote(s string) string {
	return `"` + escape(s) + `"`
}

// escape is the inside of a DOT double-quoted string. Only a double quote
// needs a backslash for the parser, but Graphviz reads backslash escapes in
// labels (\n, \l, \N for the node name), so a backslash from a host's
// data is doubled to print as itself; a newline becomes \n.
func escape(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// label writes centred lines as one DOT label.
func label(lines ...string) string {
	return quote(strings.Join(lines, "\n"))
}

// leftLabel writes left-aligned lines: each ends in \l, Graphviz's
// left-justified line break.
func leftLabel(lines ...string) string {
	esc := make([]string, len(lines))
	for i, l := range lines {
		esc[i] = escape(l)
	}
	return `"` + strings.Join(esc, `\l`) + `\l"`
}
