package graph

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/internal/hostrange"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// The picture is laid out the way lstopo (hwloc) draws a machine: nested
// boxes, CPU socket ⊃ NUMA node ⊃ PCIe root port and switches ⊃ devices,
// sockets and NUMA nodes in number order, GPUs in index order left to
// right. NVLink is one band under the GPUs, each GPU joined to it, not a
// line per pair. Each picture is laid out to fit a screen of ScreenWidth
// × ScreenHeight pixels with no text smaller than MinTextPx there.
const (
	// ScreenWidth and ScreenHeight are the screen one picture must fit.
	ScreenWidth, ScreenHeight = 1600.0, 1000.0
	// MinTextPx is the smallest text size, in pixels, once a picture is
	// scaled down to fit the screen.
	MinTextPx = 11.0
)

// Sizes in pixels.
const (
	sizeTitle = 16.0
	sizeSub   = 13.0
	sizeLabel = 13.0
	sizeBody  = 12.0
	leading   = 3.0  // between lines
	pad       = 6.0  // inside a box
	gap       = 8.0  // between boxes
	margin    = 12.0 // around the picture
	boxText   = 112.0
	badgeW    = 22.0
	bandH     = 26.0
)

// Colours of the picture.
const (
	colourText     = "#1a1a1a"
	colourMuted    = "#555555"
	colourBorder   = "#8c8c8c"
	colourBridge   = "#e6e6e6"
	colourBandText = "#ffffff"
)

// WriteSVG writes the pictures as SVG, one under the other, each laid out
// to fit a 1600 × 1000 pixel screen on its own (a nested <svg> element
// each, class "picture").
func WriteSVG(w io.Writer, pics []Picture) error {
	return writeSVG(w, layoutAll(pics))
}

// WritePNG writes the same pictures as WriteSVG as one PNG image, a
// scene pixel an image pixel.
func WritePNG(w io.Writer, pics []Picture) error {
	return writePNG(w, layoutAll(pics))
}

func layoutAll(pics []Picture) []*scene {
	f := newFonts()
	var out []*scene
	for _, p := range pics {
		out = append(out, layoutPicture(f, p))
	}
	return out
}

// line is one line of text in a box.
type line struct {
	text string
	size float64
	bold bool
	fill string
}

func lineHeight(size float64) float64 { return size + leading }

func linesHeight(ls []line) float64 {
	h := 0.0
	for _, l := range ls {
		h += lineHeight(l.size)
	}
	return h
}

func (f fonts) linesWidth(ls []line) float64 {
	w := 0.0
	for _, l := range ls {
		w = max(w, f.width(l.text, l.size, l.bold))
	}
	return w
}

// wrapped is text wrapped to width, each piece a line of the same style.
func (f fonts) wrapped(s string, size float64, bold bool, fill string, width float64) []line {
	var out []line
	for _, t := range f.wrap(s, size, bold, width) {
		out = append(out, line{text: t, size: size, bold: bold, fill: fill})
	}
	return out
}

// device is a GPU, NIC or NVMe box, sized.
type device struct {
	box     *Box
	lines   []line
	badge   string // the numbers of its problems, "" for none
	w, h    float64
	x, y    float64 // placed
	isGPU   bool
	problem bool
}

// column is one PCIe root port (or a spec's switch, or the devices
// attached to a NUMA node directly): its bridges as a header, its other
// devices stacked, its GPUs side by side at the bottom.
type column struct {
	header []line
	others []*device
	gpus   []*device
	w, h   float64
	order  int // the lowest GPU index under it, else a large number and the box order
}

// container is a CPU socket or a NUMA node: a header over its children.
type container struct {
	header   []line
	numas    []*container // a socket's NUMA nodes
	columns  []*column    // a NUMA node's columns (a socket's, for devices outside any NUMA node)
	w        float64
	headH    float64
	contentW float64
}

type pictureLayout struct {
	f        fonts
	t        *Topology
	children map[string][]*Box
	badges   map[string][]int
	devices  []*device
}

func layoutPicture(f fonts, p Picture) *scene {
	t := p.Topology
	pl := &pictureLayout{f: f, t: t, children: map[string][]*Box{}, badges: map[string][]int{}}
	for i := range t.Boxes {
		b := &t.Boxes[i]
		if b.Parent != "" && t.box(b.Parent) != nil {
			pl.children[b.Parent] = append(pl.children[b.Parent], b)
		}
	}
	for i, pr := range t.Problems {
		pl.badges[pr.Box] = append(pl.badges[pr.Box], i+1)
	}
	sockets := pl.sockets()

	// Sockets go k to a row; k is chosen to show the text largest on the
	// screen (all in one row unless that is too wide).
	var best *scene
	bestScale := -1.0
	for k := len(sockets); k >= 1; k-- {
		sc := pl.draw(p, sockets, k)
		s := fitScale(sc.W, sc.H)
		if s > bestScale+1e-9 {
			best, bestScale = sc, s
		}
		if s >= 1 {
			break
		}
	}
	return best
}

// fitScale is how much a w × h picture is shrunk to fit the screen (1 when
// it fits as it is).
func fitScale(w, h float64) float64 {
	return min(1, ScreenWidth/w, ScreenHeight/h)
}

// sockets builds the containers from the boxes: every socket, its NUMA
// nodes, their columns; boxes whose parent is missing hang off the first
// socket as a column of their own.
func (pl *pictureLayout) sockets() []*container {
	t := pl.t
	var out []*container
	for i := range t.Boxes {
		b := &t.Boxes[i]
		if b.Kind != KindSocket {
			continue
		}
		s := &container{header: pl.containerHeader(b)}
		var bare []*Box
		for _, c := range pl.children[b.ID] {
			if c.Kind == KindNUMA {
				if len(pl.children[c.ID]) == 0 {
					bare = append(bare, c)
				}
				n := &container{header: pl.containerHeader(c), columns: pl.columns(c)}
				s.numas = append(s.numas, n)
			} else {
				s.columns = append(s.columns, pl.column(c))
			}
		}
		if len(bare) >= foldBareNUMA {
			kept := s.numas[:0]
			for _, n := range s.numas {
				if len(n.columns) > 0 {
					kept = append(kept, n)
				}
			}
			s.numas = append(kept, &container{header: bareNUMAHeader(bare)})
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		out = append(out, &container{header: []line{{text: "CPU", size: sizeBody, bold: true}}})
	}
	// Boxes that hang from nothing drawn (no socket above them).
	for i := range t.Boxes {
		b := &t.Boxes[i]
		if b.Kind != KindSocket && (b.Parent == "" || t.box(b.Parent) == nil) {
			out[0].columns = append(out[0].columns, pl.column(b))
		}
	}
	return out
}

// foldBareNUMA is how many NUMA nodes without devices a socket may have
// before they are drawn as one box: a Grace tray has 32 (its GPUs' memory
// as NUMA nodes for MIG and coherent access), which as boxes of their own
// made the picture three screens wide.
const foldBareNUMA = 3

// bareNUMAHeader is the one box for a socket's NUMA nodes without
// devices: their numbers folded ("NUMA 2-33", as lstopo lists such a set)
// and each distinct description once with how many nodes it fits.
func bareNUMAHeader(bare []*Box) []line {
	labels := make([]string, len(bare))
	var details []string
	count := map[string]int{}
	for i, b := range bare {
		labels[i] = b.Label
		d := strings.Join(b.Detail, " · ")
		if count[d] == 0 {
			details = append(details, d)
		}
		count[d]++
	}
	// "NUMA [2-33]" from the host-name folding, written without brackets.
	name := strings.NewReplacer("[", "", "]", "").Replace(hostrange.Fold(labels))
	ls := []line{{text: name, size: sizeBody, bold: true}}
	for _, d := range details {
		ls = append(ls, line{text: fmt.Sprintf("%d × %s", count[d], d), size: sizeBody, fill: colourMuted})
	}
	return ls
}

func (pl *pictureLayout) containerHeader(b *Box) []line {
	ls := []line{{text: b.Label, size: sizeBody, bold: true}}
	if len(b.Detail) > 0 {
		ls = append(ls, line{text: strings.Join(b.Detail, " · "), size: sizeBody, fill: colourMuted})
	}
	return ls
}

// columns are a NUMA node's children: one column per root port or
// switch, and one for the devices attached to the node directly; those
// with GPUs first in GPU order, then the rest in box order.
func (pl *pictureLayout) columns(numa *Box) []*column {
	var cols []*column
	var direct *column
	for _, c := range pl.children[numa.ID] {
		if c.Kind == KindRootPort || c.Kind == KindSwitch {
			cols = append(cols, pl.column(c))
			continue
		}
		if direct == nil {
			direct = &column{}
			cols = append(cols, direct)
		}
		pl.addDevice(direct, c)
	}
	for i, c := range cols {
		pl.finish(c, i)
	}
	slices.SortStableFunc(cols, func(a, b *column) int { return a.order - b.order })
	return cols
}

// column is the subtree under one bridge (or one device).
func (pl *pictureLayout) column(b *Box) *column {
	c := &column{}
	var walk func(b *Box)
	walk = func(b *Box) {
		switch b.Kind {
		case KindRootPort, KindSwitch:
			text := b.Label
			if len(b.Detail) > 0 {
				text += " " + strings.Join(b.Detail, " ")
			}
			c.header = append(c.header, pl.f.wrapped(text, sizeBody, false, colourText, boxText)...)
			for _, k := range pl.children[b.ID] {
				walk(k)
			}
		default:
			pl.addDevice(c, b)
		}
	}
	walk(b)
	pl.finish(c, 0)
	return c
}

func (pl *pictureLayout) finish(c *column, i int) {
	c.order = 1<<20 + i
	for _, g := range c.gpus {
		c.order = min(c.order, gpuIndex(g.box))
	}
	slices.SortStableFunc(c.gpus, func(a, b *device) int { return gpuIndex(a.box) - gpuIndex(b.box) })
	w := pl.f.linesWidth(c.header) + 2*pad
	h := 0.0
	if len(c.header) > 0 {
		h = linesHeight(c.header) + 2*pad
	}
	for _, d := range c.others {
		w = max(w, d.w)
		h += gap + d.h
	}
	gw, gh := 0.0, 0.0
	for i, g := range c.gpus {
		if i > 0 {
			gw += gap
		}
		gw += g.w
		gh = max(gh, g.h)
	}
	if len(c.gpus) > 0 {
		h += gap + gh
	}
	c.w, c.h = max(w, gw), h
}

func gpuIndex(b *Box) int {
	var idx int
	if _, err := fmt.Sscanf(b.Label, "GPU%d", &idx); err != nil {
		return 1 << 20
	}
	return idx
}

// addDevice sizes a device's box and puts it in the column.
func (pl *pictureLayout) addDevice(c *column, b *Box) {
	d := &device{box: b, isGPU: b.Kind == KindGPU, problem: b.Problem || b.Missing}
	if n := pl.badges[b.ID]; len(n) > 0 {
		var s []string
		for _, i := range n {
			s = append(s, fmt.Sprint(i))
		}
		d.badge = strings.Join(s, ",")
	}
	f := pl.f
	labelFill := colourText
	if d.problem {
		labelFill = colourProblem
	}
	labelW := boxText
	if d.badge != "" {
		labelW -= f.width(d.badge, sizeBody, true) + 2*pad
	}
	d.lines = f.wrapped(b.Label, sizeLabel, true, labelFill, labelW)
	for _, s := range b.Detail {
		fill := colourText
		if slices.Contains(b.Noted, s) {
			fill = colourProblem
		}
		d.lines = append(d.lines, f.wrapped(s, sizeBody, false, fill, boxText)...)
	}
	if b.Link != nil {
		fill := colourText
		if pl.linkProblem(b.ID) {
			fill = colourProblem
		}
		d.lines = append(d.lines, f.wrapped("PCIe "+b.Link.String(), sizeBody, false, fill, boxText)...)
	}
	if d.isGPU {
		for _, p := range pl.t.Pairs {
			if p.GPU != b.ID {
				continue
			}
			nic := pl.t.box(p.NIC)
			fill := colourPair
			if p.Level == nvmlfacts.LevelSys {
				fill = colourProblem
			}
			if nic != nil {
				d.lines = append(d.lines, f.wrapped("NIC "+nic.Label+" · "+string(p.Level), sizeBody, false, fill, boxText)...)
			}
		}
	}
	d.w = max(boxText, f.linesWidth(d.lines)) + 2*pad
	d.h = linesHeight(d.lines) + 2*pad
	if d.isGPU {
		c.gpus = append(c.gpus, d)
	} else {
		c.others = append(c.others, d)
	}
	pl.devices = append(pl.devices, d)
}

func (pl *pictureLayout) linkProblem(id string) bool {
	return pl.t.hasProblem(id, ProblemLink)
}

// draw lays the sockets out k to a row and returns the scene.
func (pl *pictureLayout) draw(p Picture, sockets []*container, k int) *scene {
	f := pl.f
	t := pl.t
	sc := &scene{}
	// Rows of sockets, sized first.
	var rows [][]*container
	for i := 0; i < len(sockets); i += k {
		rows = append(rows, sockets[i:min(i+k, len(sockets))])
	}
	type rowSize struct{ w, sockHead, numaHead, colH float64 }
	var sizes []rowSize
	width := 0.0
	for _, row := range rows {
		var rs rowSize
		for _, s := range row {
			pl.sizeSocket(s)
			rs.sockHead = max(rs.sockHead, s.headH)
			for _, n := range s.numas {
				rs.numaHead = max(rs.numaHead, n.headH)
				for _, c := range n.columns {
					rs.colH = max(rs.colH, c.h)
				}
			}
			for _, c := range s.columns {
				rs.colH = max(rs.colH, c.h)
			}
		}
		for i, s := range row {
			if i > 0 {
				rs.w += gap
			}
			rs.w += s.w
		}
		sizes = append(sizes, rs)
		width = max(width, rs.w)
	}
	// At least wide enough for the legend's notes to read as sentences.
	width = max(width+2*margin, 720)
	if len(rows) > 1 && t.Fabric != nil {
		// Room right of the sockets for the bar joining the rows' bands.
		width += 12
	}

	// The heading: the hosts, then the machine.
	inner := width - 2*margin
	head := f.wrapped(p.Heading(), sizeTitle, true, colourText, inner)
	head = append(head, f.wrapped(t.Title+" (from "+string(t.Source)+")", sizeSub, false, colourMuted, inner)...)
	width = max(width, f.linesWidth(head)+2*margin)
	y := margin
	y = pl.text(sc, margin, y, head)
	y += gap

	// Sockets, row by row; a band of NVLink under each row's GPUs.
	var bandTops []float64
	for ri, row := range rows {
		rs := sizes[ri]
		x := margin
		rowBottom := y
		for _, s := range row {
			bottom := pl.placeSocket(sc, s, x, y, rs.sockHead, rs.numaHead, rs.colH)
			rowBottom = max(rowBottom, bottom)
			x += s.w + gap
		}
		y = rowBottom + gap
		if t.Fabric != nil && len(t.Fabric.Members) > 0 {
			bandTops = append(bandTops, y+gap)
			y += gap + bandH + gap
		}
	}
	if t.Fabric != nil && len(bandTops) > 0 {
		pl.band(sc, width, bandTops)
	}

	// The legend: what the colours mean, then the problems, numbered as
	// their badges are.
	y += gap
	y = pl.legend(sc, width, y)
	sc.W, sc.H = math.Ceil(width), math.Ceil(y+margin)
	return sc
}

// text draws lines from top y at x and returns the y under them.
func (pl *pictureLayout) text(sc *scene, x, y float64, ls []line) float64 {
	for _, l := range ls {
		y += l.size
		sc.add(textItem{X: x, Y: y, Text: l.text, Size: l.size, Bold: l.bold, Fill: l.fill})
		y += leading
	}
	return y
}

// sizeSocket works out the widths of a socket and its NUMA nodes and
// wraps their headers to them.
func (pl *pictureLayout) sizeSocket(s *container) {
	f := pl.f
	cw := 0.0
	for i, n := range s.numas {
		pl.sizeColumns(n, 96)
		if i > 0 {
			cw += gap
		}
		cw += n.w
	}
	for _, c := range s.columns {
		if cw > 0 {
			cw += gap
		}
		cw += c.w
	}
	cw = max(cw, 150)
	s.header = rewrap(f, s.header, cw)
	s.contentW = max(cw, f.linesWidth(s.header))
	s.w = s.contentW + 2*pad
	s.headH = linesHeight(s.header)
}

func (pl *pictureLayout) sizeColumns(n *container, minW float64) {
	f := pl.f
	cw := 0.0
	for i, c := range n.columns {
		if i > 0 {
			cw += gap
		}
		cw += c.w
	}
	cw = max(cw, minW)
	n.header = rewrap(f, n.header, cw)
	n.contentW = max(cw, f.linesWidth(n.header))
	n.w = n.contentW + 2*pad
	n.headH = linesHeight(n.header)
}

// rewrap wraps a header's lines to width.
func rewrap(f fonts, ls []line, width float64) []line {
	var out []line
	for _, l := range ls {
		out = append(out, f.wrapped(l.text, l.size, l.bold, l.fill, width)...)
	}
	return out
}

// placeSocket draws socket s with its top left at x, y; every socket of a
// row has the same header and column heights, so the GPUs of a row line
// up over the NVLink band. It returns the socket's bottom.
func (pl *pictureLayout) placeSocket(sc *scene, s *container, x, y, sockHead, numaHead, colH float64) float64 {
	h := pad + sockHead + gap + colH + pad
	if len(s.numas) > 0 {
		h += numaHead + 2*pad + gap
	}
	sc.add(rectItem{X: x, Y: y, W: s.w, H: h, Radius: 6, Fill: fill(KindSocket), Stroke: colourBorder, StrokeWidth: 1})
	pl.text(sc, x+pad, y+pad, s.header)
	cy := y + pad + sockHead + gap
	cx := x + pad
	for _, n := range s.numas {
		nh := pad + numaHead + gap + colH + pad
		sc.add(rectItem{X: cx, Y: cy, W: n.w, H: nh, Radius: 4, Fill: fill(KindNUMA), Stroke: colourBorder, StrokeWidth: 1})
		pl.text(sc, cx+pad, cy+pad, n.header)
		colX := cx + pad
		for _, c := range n.columns {
			pl.placeColumn(sc, c, colX, cy+pad+numaHead+gap, colH)
			colX += c.w + gap
		}
		cx += n.w + gap
	}
	for _, c := range s.columns {
		pl.placeColumn(sc, c, cx, cy, colH)
		cx += c.w + gap
	}
	return y + h
}

// placeColumn draws a column in a slot colH high: the bridges on top,
// the other devices under them, the GPUs at the slot's bottom.
func (pl *pictureLayout) placeColumn(sc *scene, c *column, x, y, colH float64) {
	bottom := y + colH
	if len(c.header) > 0 {
		hh := linesHeight(c.header) + 2*pad
		sc.add(rectItem{X: x, Y: y, W: c.w, H: colH, Radius: 4, Fill: "#fafafa", Stroke: colourBorder, StrokeWidth: 1})
		sc.add(rectItem{X: x, Y: y, W: c.w, H: hh, Radius: 4, Fill: colourBridge})
		pl.text(sc, x+pad, y+pad, c.header)
		y += hh
	}
	for _, d := range c.others {
		y += gap
		pl.placeDevice(sc, d, x+(c.w-d.w)/2, y)
		y += d.h
	}
	gw := 0.0
	for i, g := range c.gpus {
		if i > 0 {
			gw += gap
		}
		gw += g.w
	}
	gx := x + (c.w-gw)/2
	for _, g := range c.gpus {
		pl.placeDevice(sc, g, gx, bottom-g.h)
		gx += g.w + gap
	}
}

func (pl *pictureLayout) placeDevice(sc *scene, d *device, x, y float64) {
	d.x, d.y = x, y
	stroke, width := colourBorder, 1.0
	if d.problem {
		stroke, width = colourProblem, 2.5
	}
	fillC := fill(d.box.Kind)
	if d.box.Missing {
		fillC = "#ffffff"
	}
	sc.add(rectItem{X: x, Y: y, W: d.w, H: d.h, Radius: 4, Fill: fillC, Stroke: stroke, StrokeWidth: width, Dashed: d.box.Missing})
	if d.badge != "" {
		bw := pl.f.width(d.badge, sizeBody, true) + 2*pad - 2
		sc.add(rectItem{X: x + d.w - bw - 3, Y: y + 3, W: bw, H: sizeBody + 6, Radius: 3, Fill: colourProblem})
		sc.add(textItem{X: x + d.w - 3 - bw/2, Y: y + 3 + sizeBody + 1, Text: d.badge, Size: sizeBody, Bold: true, Fill: "#ffffff", Middle: true})
	}
	pl.text(sc, x+pad, y+pad, d.lines)
}

// band draws the NVLink domain: one bar under each row of sockets, joined
// at the right when there are several, and a line from each member GPU
// down to the bar under it.
func (pl *pictureLayout) band(sc *scene, width float64, tops []float64) {
	f := pl.t.Fabric
	label := f.Label
	if len(f.Detail) > 0 {
		label += " · " + strings.Join(f.Detail, " · ")
	}
	if f.AllToAll {
		label += " — every GPU to every other"
	}
	x0, x1 := margin, width-margin
	for _, id := range f.Members {
		for _, d := range pl.devices {
			if d.box.ID != id {
				continue
			}
			cx := d.x + d.w/2
			bottom := d.y + d.h
			top := tops[0]
			for _, t := range tops {
				if t > bottom {
					top = t
					break
				}
			}
			sc.add(lineItem{Points: []point{{cx, bottom}, {cx, top}}, Stroke: colourNVLink, Width: 3})
		}
	}
	for i, t := range tops {
		sc.add(rectItem{X: x0, Y: t, W: x1 - x0, H: bandH, Radius: 5, Fill: colourNVLink})
		if i > 0 {
			sc.add(rectItem{X: x1 - 8, Y: tops[i-1] + bandH/2, W: 8, H: t - tops[i-1], Fill: colourNVLink})
		}
		for _, l := range pl.f.wrapped(label, sizeBody, true, colourBandText, x1-x0-2*pad)[:1] {
			sc.add(textItem{X: x0 + pad, Y: t + bandH/2 + sizeBody/2 - 2, Text: l.text, Size: sizeBody, Bold: true, Fill: colourBandText})
		}
	}
}

// legend draws the key to the colours and the numbered problems under y
// and returns the y under them.
func (pl *pictureLayout) legend(sc *scene, width, y float64) float64 {
	f := pl.f
	t := pl.t
	type key struct {
		fill, stroke, text string
		dashed             bool
	}
	kinds := map[Kind]bool{}
	noted, idle := false, false
	for _, b := range t.Boxes {
		kinds[b.Kind] = true
		noted = noted || len(b.Noted) > 0
		if b.Kind == KindGPU && b.Link != nil && b.Link.Degraded() && !pl.linkProblem(b.ID) {
			idle = true
		}
	}
	keys := []key{}
	for _, k := range []struct {
		kind Kind
		text string
	}{{KindGPU, "GPU"}, {KindNIC, "NIC"}, {KindNVMe, "NVMe"}} {
		if kinds[k.kind] {
			keys = append(keys, key{fill: fill(k.kind), stroke: colourBorder, text: k.text})
		}
	}
	if kinds[KindRootPort] || kinds[KindSwitch] {
		keys = append(keys, key{fill: colourBridge, stroke: colourBorder, text: "PCIe root port / switch"})
	}
	if t.Fabric != nil {
		keys = append(keys, key{fill: colourNVLink, text: "NVLink"})
	}
	keys = append(keys, key{fill: "#ffffff", stroke: colourProblem, text: "a problem (numbered below)"})
	for _, b := range t.Boxes {
		if b.Missing {
			keys = append(keys, key{fill: "#ffffff", stroke: colourProblem, dashed: true, text: "declared, not found"})
			break
		}
	}
	x := margin
	lineH := lineHeight(sizeBody) + 2
	for _, k := range keys {
		w := 16 + 4 + f.width(k.text, sizeBody, false) + 16
		if x+w > width-margin && x > margin {
			x = margin
			y += lineH
		}
		sc.add(rectItem{X: x, Y: y + 2, W: 16, H: sizeBody, Radius: 2, Fill: k.fill, Stroke: k.stroke, StrokeWidth: 1.5, Dashed: k.dashed})
		sc.add(textItem{X: x + 20, Y: y + sizeBody, Text: k.text, Size: sizeBody, Fill: colourText})
		x += w
	}
	y += lineH + leading
	inner := width - 2*margin
	var notes []string
	if pairs := t.Pairs; len(pairs) > 0 {
		kind := "its nearest RDMA NIC"
		if pairs[0].Declared {
			kind = "the NIC affinity pairs it with"
		}
		notes = append(notes, "The NIC line of a GPU: "+kind+", and the level where their PCIe paths meet as nvidia-smi topo -m names it (PIX, PXB, PHB, NODE; SYS, across sockets, in red).")
	}
	if noted {
		notes = append(notes, "Red text in a NIC: a port down, or slower than the node's fastest port of its link layer; drawn, not judged, unless a spec names the NIC a rail.")
	}
	if idle {
		notes = append(notes, "A GPU's link at a lower generation but full width is idle power saving, not a problem (verify and bench judge it).")
	}
	for _, n := range notes {
		y = pl.text(sc, margin, y, f.wrapped(n, sizeBody, false, colourMuted, inner))
	}
	if len(t.Problems) == 0 {
		return pl.text(sc, margin, y+leading, []line{{text: "No problems seen.", size: sizeBody, bold: true}})
	}
	y = pl.text(sc, margin, y+leading, []line{{text: fmt.Sprintf("Problems (%d)", len(t.Problems)), size: sizeBody, bold: true, fill: colourProblem}})
	for i, pr := range t.Problems {
		num := fmt.Sprint(i + 1)
		bw := f.width(num, sizeBody, true) + 2*pad - 2
		sc.add(rectItem{X: margin, Y: y + 1, W: bw, H: sizeBody + 4, Radius: 3, Fill: colourProblem})
		sc.add(textItem{X: margin + bw/2, Y: y + sizeBody, Text: num, Size: sizeBody, Bold: true, Fill: "#ffffff", Middle: true})
		y = pl.text(sc, margin+bw+pad, y, f.wrapped(pr.Text, sizeBody, false, colourText, inner-bw-pad))
		y += 2
	}
	return y
}
