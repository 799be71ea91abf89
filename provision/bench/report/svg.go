package report

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/gpuform/gpuform/provision/bench"
)

// Chart titles; tests look for them in the SVG.
const (
	// LayersTitle heads the chart of measured against expected per layer.
	LayersTitle = "Measured vs expected per layer"
	// ScalingTitle heads the chart of the scaling curve against ideal.
	ScalingTitle = "Scaling vs ideal"
)

// WriteSVG draws, for each host that was benched, two charts side by side:
// each layer's lowest measurement as a share of its expectation (100% is
// the expected figure), and the scaling curve against ideal — the
// workload's throughput against n × T(1) when the spec names a workload,
// else all_reduce bus bandwidth against what the links should carry.
func WriteSVG(w io.Writer, r *bench.Report) error {
	rows, err := charts(r)
	if err != nil {
		return err
	}
	c := vgsvg.New(vg.Length(11)*vg.Inch, vg.Length(4.5*float64(len(rows)))*vg.Inch)
	drawCharts(draw.New(c), rows)
	_, err = c.WriteTo(w)
	return err
}

// charts builds the two charts of every host that was benched.
func charts(r *bench.Report) ([][]*plot.Plot, error) {
	var rows [][]*plot.Plot
	for _, h := range r.Hosts {
		if h.Error != "" {
			continue
		}
		lp, err := layersPlot(h)
		if err != nil {
			return nil, err
		}
		sp, err := scalingPlot(h)
		if err != nil {
			return nil, err
		}
		rows = append(rows, []*plot.Plot{lp, sp})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no host was benched: nothing to draw")
	}
	return rows, nil
}

// drawCharts lays the charts out one host a row, aligned.
func drawCharts(dc draw.Canvas, rows [][]*plot.Plot) {
	tiles := draw.Tiles{Rows: len(rows), Cols: 2, PadX: vg.Millimeter * 8, PadY: vg.Millimeter * 8,
		PadTop: vg.Millimeter * 4, PadBottom: vg.Millimeter * 4, PadLeft: vg.Millimeter * 4, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(rows, tiles, dc)
	for i := range rows {
		for j, p := range rows[i] {
			p.Draw(canvases[i][j])
		}
	}
}

func layersPlot(h bench.Host) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = LayersTitle + " — " + h.Host
	p.Y.Label.Text = "measured, % of expected"
	var vals plotter.Values
	var names []string
	for _, g := range groups(h.Layers) {
		if low := lowest(g); low != nil {
			vals = append(vals, *low.Percent)
			names = append(names, fmt.Sprintf("%s %s\n%s", low.Layer, groupTest(low.Test), low.Device))
		}
	}
	if len(vals) == 0 {
		p.Title.Text += " (nothing measured against an expectation)"
		return p, nil
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(18))
	if err != nil {
		return nil, err
	}
	bars.Color = color.RGBA{R: 0x4c, G: 0x72, B: 0xb0, A: 0xff}
	p.Add(bars)
	p.NominalX(names...)
	p.X.Tick.Label.Font.Size = vg.Points(7)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YTop
	expected := plotter.NewFunction(func(float64) float64 { return 100 })
	expected.Color = color.RGBA{R: 0xc4, G: 0x4e, B: 0x52, A: 0xff}
	expected.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	p.Add(expected)
	p.Legend.Add("measured (lowest device)", bars)
	p.Legend.Add("expected (100%)", expected)
	p.Legend.Top = true
	p.Y.Min = 0
	p.Y.Max = 120
	return p, nil
}

func scalingPlot(h bench.Host) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = ScalingTitle + " — " + h.Host
	p.X.Label.Text = "GPUs"
	var meas, ideal plotter.XYs
	t1 := 0.0
	for _, s := range h.Scaling {
		if s.Throughput != nil && s.GPUs == 1 {
			t1 = *s.Throughput
		}
	}
	workload := false
	for _, s := range h.Scaling {
		workload = workload || s.Throughput != nil
	}
	for _, s := range h.Scaling {
		switch {
		case workload && s.Throughput != nil:
			meas = append(meas, plotter.XY{X: float64(s.GPUs), Y: *s.Throughput})
			if t1 > 0 {
				ideal = append(ideal, plotter.XY{X: float64(s.GPUs), Y: float64(s.GPUs) * t1})
			}
		case !workload && s.BusBWGBps != nil:
			meas = append(meas, plotter.XY{X: float64(s.GPUs), Y: *s.BusBWGBps})
			if s.ExpectedBusBWGBps != nil {
				ideal = append(ideal, plotter.XY{X: float64(s.GPUs), Y: *s.ExpectedBusBWGBps})
			}
		}
	}
	if workload {
		p.Y.Label.Text = "workload throughput"
	} else {
		p.Y.Label.Text = "all_reduce busbw (GB/s)"
	}
	if len(meas) == 0 {
		p.Title.Text += " (no scaling measured)"
		return p, nil
	}
	l, pts, err := plotter.NewLinePoints(meas)
	if err != nil {
		return nil, err
	}
	l.Color = color.RGBA{R: 0x4c, G: 0x72, B: 0xb0, A: 0xff}
	p.Add(l, pts)
	p.Legend.Add("measured", l, pts)
	if len(ideal) > 0 {
		il, err := plotter.NewLine(ideal)
		if err != nil {
			return nil, err
		}
		il.Color = color.RGBA{R: 0xc4, G: 0x4e, B: 0x52, A: 0xff}
		il.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		p.Add(il)
		if workload {
			p.Legend.Add("ideal n × T(1)", il)
		} else {
			p.Legend.Add("expected", il)
		}
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Y.Min = 0
	return p, nil
}
