package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/gpuform/gpuform/provision/bench"
)

// Panel titles: each panel answers one question; tests look for them.
const (
	// LayersTitle heads the panel of each layer as a share of what its
	// hardware should carry.
	LayersTitle = "Which layer is below expectation?"
	// ScalingTitle heads the panel of the scaling curve against its
	// expectation.
	ScalingTitle = "Does it scale?"
)

// The chart is drawn ChartWidth points wide: 800 pixels at the 96 dpi
// browsers assume, the width it is meant to be read at, with no text
// under 9 pt (12 px) there.
const (
	ChartWidth = 600 * vg.Length(1)
	chartDPI   = 96
	layersRowH = 22 * vg.Length(1)
	scalingH   = 270 * vg.Length(1)
	titleSize  = 11
	labelSize  = 10
	tickSize   = 9
)

// Colours: the bottleneck stands out, other layers below expectation are
// marked, the rest are muted so the eye goes to what is slow.
var (
	colourBottleneck = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colourBelow      = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colourMuted      = color.RGBA{R: 0xb4, G: 0xb4, B: 0xb4, A: 0xff}
	colourMeasured   = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colourExpected   = color.RGBA{R: 0x33, G: 0x33, B: 0x33, A: 0xff}
)

// PlotFormat is the chart's file format, chosen by the -plot file's
// extension: ".svg" or ".png".
func PlotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("%s: the chart's file must end in .svg or .png", path)
	}
}

// WriteSVG draws the chart as SVG: for each host that was benched, one
// panel per question, one under the other.
func WriteSVG(w io.Writer, r *bench.Report) error {
	return writeChart(w, r, "svg")
}

// WritePNG draws the same chart as WriteSVG as a PNG, 800 pixels wide.
func WritePNG(w io.Writer, r *bench.Report) error {
	return writeChart(w, r, "png")
}

// panel is one plot with its legend, drawn under it rather than over the
// data.
type panel struct {
	plot    *plot.Plot
	legend  plot.Legend
	entries int
	height  vg.Length
}

func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font = sans(tickSize)
	l.Left = true
	l.Padding = vg.Points(legendGap)
	l.ThumbnailWidth = vg.Points(24)
	return l
}

// legendGap is the room between legend lines.
const legendGap = 3

// sans is Liberation Sans at size points: plot's default face is the
// serif one.
func sans(size float64) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: font.Length(size)}
}

func (p *panel) add(name string, thumbs ...plot.Thumbnailer) {
	p.legend.Add(name, thumbs...)
	p.entries++
}

func writeChart(w io.Writer, r *bench.Report, format string) error {
	var panels []*panel
	for _, h := range r.Hosts {
		if h.Error != "" {
			continue
		}
		panels = append(panels, layersPlot(h), scalingPlot(h))
	}
	if len(panels) == 0 {
		return fmt.Errorf("no host was benched: nothing to draw")
	}
	var total vg.Length
	for _, p := range panels {
		total += p.height
	}
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(ChartWidth, total), vgimg.UseDPI(chartDPI), vgimg.UseBackgroundColor(color.White))}
	default:
		c = vgsvg.New(ChartWidth, total)
	}
	dc := draw.New(c)
	top := total
	for _, p := range panels {
		// vg counts up from the bottom: this panel is the band under the
		// ones before it.
		sub := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: 0, Y: top - p.height}, Max: vg.Point{X: ChartWidth, Y: top}}}
		drawPanel(sub, p)
		top -= p.height
	}
	_, err := c.WriteTo(w)
	return err
}

// drawPanel draws a plot and, under it, its legend, so the legend never
// covers the data.
func drawPanel(c draw.Canvas, p *panel) {
	pad := vg.Points(8)
	c = draw.Crop(c, pad, -pad, pad, -pad/2)
	legH := legendHeight(p.entries)
	p.plot.Draw(draw.Crop(c, 0, 0, legH, 0))
	if p.entries > 0 {
		p.legend.Draw(draw.Crop(c, vg.Points(16), 0, 0, -(c.Max.Y - c.Min.Y - legH)))
	}
}

// legendHeight is the room a legend of n entries takes, one a line.
func legendHeight(n int) vg.Length {
	if n == 0 {
		return 0
	}
	return vg.Length(n)*vg.Points(tickSize*1.2+legendGap) + vg.Points(6)
}

func styled(p *plot.Plot, title string) {
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(titleSize)
	p.Title.TextStyle.Font.Weight = xfont.WeightBold
	p.Title.Padding = vg.Points(6)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(labelSize)
		a.Tick.Label.Font = sans(tickSize)
	}
}

// bar is one row of the layers panel.
type bar struct {
	label   string
	percent float64
	kind    int // 0 muted, 1 below expectation, 2 the bottleneck
}

// layerBars is each layer's lowest measurement per test, against its
// expectation; the contrast runs (another NUMA node on purpose) are left
// to the text report.
func layerBars(h bench.Host) []bar {
	var bars []bar
	bottleneckDone := false
	for _, g := range groups(h.Layers) {
		low := lowest(g)
		if low == nil || low.Verdict == bench.VerdictContrast {
			continue
		}
		b := bar{label: fmt.Sprintf("%s · %s · %s", low.Layer, groupTest(low.Test), low.Device), percent: *low.Percent}
		if low.Verdict == bench.VerdictBelow {
			b.kind = 1
		}
		if bn := h.Bottleneck; bn != nil && !bottleneckDone && bn.Layer == low.Layer && bn.Device == low.Device && math.Abs(bn.Percent-*low.Percent) < 0.05 {
			b.kind, bottleneckDone = 2, true
		}
		bars = append(bars, b)
	}
	return bars
}

// layersPlot is the first panel: horizontal bars, the measured share of
// the expected figure, with a line at 100 %.
func layersPlot(h bench.Host) *panel {
	p := plot.New()
	pn := &panel{plot: p, legend: newLegend()}
	styled(p, LayersTitle+" "+h.Host+"\neach layer's lowest device, as % of what its hardware should carry")
	bars := layerBars(h)
	if len(bars) == 0 {
		p.Title.Text = LayersTitle + " " + h.Host + "\nnothing was measured against an expectation"
		p.HideAxes()
		pn.height = vg.Points(50)
		return pn
	}
	// The first bar on top: gonum counts rows from the bottom.
	top := 0.0
	for i, b := range bars {
		bc, err := plotter.NewBarChart(plotter.Values{b.percent}, layersRowH*0.7)
		if err != nil {
			continue
		}
		bc.XMin = float64(len(bars) - 1 - i) // its row
		bc.Horizontal = true
		bc.LineStyle.Width = 0
		switch b.kind {
		case 2:
			bc.Color = colourBottleneck
		case 1:
			bc.Color = colourBelow
		default:
			bc.Color = colourMuted
		}
		p.Add(bc)
		top = max(top, b.percent)
	}
	var labels []string
	for i := range bars {
		labels = append(labels, bars[len(bars)-1-i].label)
	}
	p.NominalY(labels...)
	p.Y.Tick.Label.Font = sans(tickSize)
	// Each bar's value at its end, bold for the bottleneck.
	var xys plotter.XYs
	var texts []string
	for i, b := range bars {
		xys = append(xys, plotter.XY{X: b.percent, Y: float64(len(bars) - 1 - i)})
		texts = append(texts, fmt.Sprintf(" %.0f%%", b.percent))
	}
	if l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts}); err == nil {
		for i, b := range bars {
			l.TextStyle[i].Font = sans(tickSize)
			l.TextStyle[i].YAlign = draw.YCenter
			if b.kind == 2 {
				l.TextStyle[i].Font.Weight = xfont.WeightBold
				l.TextStyle[i].Color = colourBottleneck
			}
		}
		p.Add(l)
	}
	line, err := plotter.NewLine(plotter.XYs{{X: 100, Y: -0.5}, {X: 100, Y: float64(len(bars)) - 0.5}})
	if err == nil {
		line.Color = colourExpected
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		line.Width = vg.Points(1.2)
		p.Add(line)
		pn.add("100 % = the expected figure (peak, achievable or the spec's floor)", line)
	}
	sw := func(c color.Color) plot.Thumbnailer {
		b, _ := plotter.NewBarChart(plotter.Values{1}, vg.Points(8))
		b.Color = c
		b.LineStyle.Width = 0
		return b
	}
	if h.Bottleneck != nil {
		pn.add("the bottleneck", sw(colourBottleneck))
	}
	pn.add("below expectation", sw(colourBelow))
	pn.add("ok", sw(colourMuted))
	p.X.Label.Text = "measured, % of expected"
	p.X.Min = 0
	// Room for the longest bar's value; 25 % steps.
	p.X.Max = math.Ceil(max(top*1.1, 110)/25) * 25
	p.X.Tick.Marker = percentTicks{}
	pn.height = vg.Points(84) + layersRowH*vg.Length(len(bars)) + legendHeight(pn.entries)
	return pn
}

// scalingPlot is the second panel: the measured curve against what it
// should be at each point.
func scalingPlot(h bench.Host) *panel {
	p := plot.New()
	pn := &panel{plot: p, legend: newLegend()}
	var meas, want plotter.XYs
	t1 := 0.0
	workload := false
	multi := false
	for _, s := range h.Scaling {
		if s.Throughput != nil && s.GPUs == 1 {
			t1 = *s.Throughput
		}
		workload = workload || s.Throughput != nil
		multi = multi || s.Nodes > 1
	}
	for _, s := range h.Scaling {
		switch {
		case workload && s.Throughput != nil:
			meas = append(meas, plotter.XY{X: float64(s.GPUs), Y: *s.Throughput})
			if t1 > 0 {
				want = append(want, plotter.XY{X: float64(s.GPUs), Y: float64(s.GPUs) * t1})
			}
		case !workload && s.BusBWGBps != nil:
			meas = append(meas, plotter.XY{X: float64(s.GPUs), Y: *s.BusBWGBps})
			if s.ExpectedBusBWGBps != nil {
				want = append(want, plotter.XY{X: float64(s.GPUs), Y: *s.ExpectedBusBWGBps})
			}
		}
	}
	reference := "the NVLink expectation"
	if multi {
		reference = "the NVLink and network expectation"
	}
	what, wantName := "all_reduce bus bandwidth", "expected: NVLink's bandwidth, or the best published all_reduce result"
	if multi {
		wantName = "expected: NVLink inside a node, the slowest NIC between nodes"
	}
	if workload {
		what, reference, wantName = "workload throughput", "linear scaling", "linear scaling: n × T(1)"
		p.Y.Label.Text = "throughput (the workload's unit)"
	} else {
		p.Y.Label.Text = "busbw, GB/s"
	}
	styled(p, fmt.Sprintf("%s %s\n%s vs %s", ScalingTitle, h.Host, what, reference))
	p.X.Label.Text = "GPUs"
	if len(meas) == 0 {
		p.Title.Text = ScalingTitle + " " + h.Host + "\nno scaling was measured"
		p.X.Label.Text, p.Y.Label.Text = "", ""
		p.HideAxes()
		pn.height = vg.Points(50)
		return pn
	}
	l, pts, err := plotter.NewLinePoints(meas)
	if err == nil {
		l.Color, l.Width = colourMeasured, vg.Points(2)
		pts.Color, pts.Shape, pts.Radius = colourMeasured, draw.CircleGlyph{}, vg.Points(3.5)
		p.Add(l, pts)
		pn.add("measured", l, pts)
	}
	if len(want) > 0 {
		if il, err := plotter.NewLine(want); err == nil {
			il.Color, il.Width = colourExpected, vg.Points(1.2)
			il.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			p.Add(il)
			pn.add(wantName, il)
		}
	}
	// Axes that fit the data: from 0 to a round figure above the highest
	// point, with a tick there, and the GPU counts as the x ticks.
	top := 0.0
	var ticks []plot.Tick
	for _, xy := range append(append(plotter.XYs{}, meas...), want...) {
		top = max(top, xy.Y)
	}
	for _, xy := range meas {
		ticks = append(ticks, plot.Tick{Value: xy.X, Label: fmt.Sprint(xy.X)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min = 0
	p.X.Max = meas[len(meas)-1].X * 1.08
	p.Y.Min = 0
	step := niceCeil(top / 5)
	p.Y.Max = math.Ceil(top*1.08/step) * step
	p.Y.Tick.Marker = stepTicks{step: step}
	// Each measured point's value beside it.
	var texts []string
	for _, xy := range meas {
		texts = append(texts, " "+trimFloat(math.Round(xy.Y*10)/10))
	}
	if lb, err := plotter.NewLabels(plotter.XYLabels{XYs: meas, Labels: texts}); err == nil {
		for i := range lb.TextStyle {
			lb.TextStyle[i].Font = sans(tickSize)
			lb.TextStyle[i].Color = colourMeasured
			lb.TextStyle[i].YAlign = draw.YTop
		}
		lb.Offset = vg.Point{X: 0, Y: -vg.Points(4)}
		p.Add(lb)
	}
	pn.height = scalingH + vg.Points(14) + legendHeight(pn.entries)
	return pn
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= v {
			return m * mag
		}
	}
	return 10 * mag
}

// stepTicks marks every step from lo to hi, hi included.
type stepTicks struct{ step float64 }

func (t stepTicks) Ticks(lo, hi float64) []plot.Tick {
	step := t.step
	var out []plot.Tick
	for v := lo; v <= hi+step/1e6; v += step {
		out = append(out, plot.Tick{Value: v, Label: trimFloat(v)})
	}
	return out
}

// percentTicks marks every 25 %.
type percentTicks struct{}

func (percentTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for v := 0.0; v <= hi+1e-9; v += 25 {
		if v >= lo {
			out = append(out, plot.Tick{Value: v, Label: trimFloat(v) + "%"})
		}
	}
	return out
}

func trimFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}
