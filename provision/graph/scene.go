package graph

import (
	"fmt"
	"html"
	"image/color"
	"io"
	"strconv"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/font/liberation"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"
)

// A scene is a picture laid out in pixels: rectangles, lines and text,
// drawn in order. One scene is written as SVG (writeSVG) or rasterised to
// PNG through gonum's vg (writePNG), so the two formats cannot disagree.
type scene struct {
	// W and H are the size in pixels.
	W, H  float64
	items []item
}

type item interface{ isItem() }

type rectItem struct {
	X, Y, W, H  float64
	Radius      float64
	Fill        string // "" for none
	Stroke      string // "" for none
	StrokeWidth float64
	Dashed      bool
}

type lineItem struct {
	Points []point
	Stroke string
	Width  float64
}

type point struct{ X, Y float64 }

// textItem is one line of text; Y is its baseline.
type textItem struct {
	X, Y   float64
	Text   string
	Size   float64
	Bold   bool
	Fill   string
	Middle bool // centred on X, else starting at X
}

func (rectItem) isItem() {}
func (lineItem) isItem() {}
func (textItem) isItem() {}

// fontFamily names Liberation Sans, whose metrics lay the scene out, and
// the fonts metric-compatible with it that a browser has instead.
const fontFamily = "Liberation Sans, Arial, Helvetica, sans-serif"

// fonts measures text in Liberation Sans, the face gonum's vg draws the
// PNG with; Arial and Helvetica have the same widths, so the SVG's text
// takes the room it was given in a browser too.
type fonts struct {
	cache *font.Cache
}

func newFonts() fonts {
	return fonts{cache: font.NewCache(liberation.Collection())}
}

func (f fonts) face(size float64, bold bool) font.Face {
	fnt := font.Font{Typeface: "Liberation", Variant: "Sans"}
	if bold {
		fnt.Weight = xfont.WeightBold
	}
	return f.cache.Lookup(fnt, font.Length(size))
}

// width is the advance of s at size px.
func (f fonts) width(s string, size float64, bold bool) float64 {
	face := f.face(size, bold)
	return face.Width(s).Points()
}

// ascent and descent of a line at size px, from the face's own metrics.

// wrap breaks s into lines no wider than max px. A line that does not
// fit breaks first between its " · " parts, then at spaces outside
// parentheses ("400 Gb/sec" over "(4X NDR) InfiniBand"); a word wider than
// max stands on a line of its own.
func (f fonts) wrap(s string, size float64, bold bool, max float64) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	if f.width(s, size, bold) <= max {
		return []string{s}
	}
	var lines []string
	cur := ""
	for _, part := range strings.Split(s, " · ") {
		if cur != "" && f.width(cur+" · "+part, size, bold) <= max {
			cur += " · " + part
			continue
		}
		if cur != "" {
			lines = append(lines, cur)
			cur = ""
		}
		words := words(part)
		for _, w := range words {
			switch {
			case cur == "":
				cur = w
			case f.width(cur+" "+w, size, bold) <= max:
				cur += " " + w
			default:
				lines = append(lines, cur)
				cur = w
			}
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// words splits s at spaces, keeping a parenthesised group whole.
func words(s string) []string {
	var out []string
	depth := 0
	start := 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth = max(depth-1, 0)
		case ' ':
			if depth == 0 {
				if i > start {
					out = append(out, s[start:i])
				}
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func (s *scene) add(it item) { s.items = append(s.items, it) }

// num writes a coordinate with at most two decimals, so goldens are stable.
func num(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

// writeSVG writes the scenes one under the other, each a nested <svg>
// with its own size, so that each picture fits a screen on its own.
func writeSVG(w io.Writer, scenes []*scene) error {
	var b strings.Builder
	width, height := 0.0, 0.0
	for _, sc := range scenes {
		width = max(width, sc.W)
		height += sc.H
	}
	fmt.Fprintf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%s\" height=\"%s\" viewBox=\"0 0 %s %s\" font-family=\"%s\">\n", num(width), num(height), num(width), num(height), fontFamily)
	y := 0.0
	for _, sc := range scenes {
		fmt.Fprintf(&b, "<svg class=\"picture\" x=\"0\" y=\"%s\" width=\"%s\" height=\"%s\" viewBox=\"0 0 %s %s\">\n", num(y), num(sc.W), num(sc.H), num(sc.W), num(sc.H))
		fmt.Fprintf(&b, "<rect x=\"0\" y=\"0\" width=\"%s\" height=\"%s\" fill=\"#ffffff\"/>\n", num(sc.W), num(sc.H))
		for _, it := range sc.items {
			writeSVGItem(&b, it)
		}
		b.WriteString("</svg>\n")
		y += sc.H
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeSVGItem(b *strings.Builder, it item) {
	switch v := it.(type) {
	case rectItem:
		fill := v.Fill
		if fill == "" {
			fill = "none"
		}
		fmt.Fprintf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"", num(v.X), num(v.Y), num(v.W), num(v.H))
		if v.Radius > 0 {
			fmt.Fprintf(b, " rx=\"%s\"", num(v.Radius))
		}
		fmt.Fprintf(b, " fill=\"%s\"", fill)
		if v.Stroke != "" {
			fmt.Fprintf(b, " stroke=\"%s\" stroke-width=\"%s\"", v.Stroke, num(v.StrokeWidth))
			if v.Dashed {
				b.WriteString(" stroke-dasharray=\"6 3\"")
			}
		}
		b.WriteString("/>\n")
	case lineItem:
		var pts []string
		for _, p := range v.Points {
			pts = append(pts, num(p.X)+","+num(p.Y))
		}
		fmt.Fprintf(b, "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"/>\n", strings.Join(pts, " "), v.Stroke, num(v.Width))
	case textItem:
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" font-size=\"%s\"", num(v.X), num(v.Y), num(v.Size))
		if v.Bold {
			b.WriteString(" font-weight=\"bold\"")
		}
		if v.Middle {
			b.WriteString(" text-anchor=\"middle\"")
		}
		fill := v.Fill
		if fill == "" {
			fill = colourText
		}
		fmt.Fprintf(b, " fill=\"%s\">%s</text>\n", fill, html.EscapeString(xmlText(v.Text)))
	}
}

// xmlText makes text read from a host safe for XML 1.0: invalid UTF-8
// and control characters, which XML cannot carry, become U+FFFD.
func xmlText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0xfffe || r == 0xffff {
			return '\uFFFD'
		}
		return r
	}, s)
}

// pngDPI is the resolution the PNG is drawn at: one scene pixel is one
// image pixel at the 96 dpi browsers assume for CSS pixels.
const pngDPI = 96

// writePNG rasterises the scenes, one under the other, with gonum's vg.
func writePNG(w io.Writer, scenes []*scene) error {
	f := newFonts()
	width, height := 0.0, 0.0
	for _, sc := range scenes {
		width = max(width, sc.W)
		height += sc.H
	}
	// vg measures in points (1/72 in): at 96 dpi a pixel is 0.75 pt.
	const pt = 72.0 / pngDPI
	c := vgimg.NewWith(vgimg.UseWH(vg.Length(width*pt), vg.Length(height*pt)), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))
	// vg's origin is the bottom left, the scene's the top left.
	at := func(x, y float64) vg.Point { return vg.Point{X: vg.Length(x * pt), Y: vg.Length((height - y) * pt)} }
	top := 0.0
	for _, sc := range scenes {
		for _, it := range sc.items {
			switch v := it.(type) {
			case rectItem:
				var p vg.Path
				p.Move(at(v.X, top+v.Y))
				p.Line(at(v.X+v.W, top+v.Y))
				p.Line(at(v.X+v.W, top+v.Y+v.H))
				p.Line(at(v.X, top+v.Y+v.H))
				p.Close()
				if v.Fill != "" {
					c.SetColor(hexColour(v.Fill))
					c.Fill(p)
				}
				if v.Stroke != "" {
					c.SetColor(hexColour(v.Stroke))
					c.SetLineWidth(vg.Length(v.StrokeWidth * pt))
					if v.Dashed {
						c.SetLineDash([]vg.Length{vg.Length(6 * pt), vg.Length(3 * pt)}, 0)
					}
					c.Stroke(p)
					c.SetLineDash(nil, 0)
				}
			case lineItem:
				var p vg.Path
				for i, q := range v.Points {
					if i == 0 {
						p.Move(at(q.X, top+q.Y))
					} else {
						p.Line(at(q.X, top+q.Y))
					}
				}
				c.SetColor(hexColour(v.Stroke))
				c.SetLineWidth(vg.Length(v.Width * pt))
				c.Stroke(p)
			case textItem:
				face := f.face(v.Size*pt, v.Bold)
				x := v.X
				if v.Middle {
					x -= f.width(v.Text, v.Size, v.Bold) / 2
				}
				fill := v.Fill
				if fill == "" {
					fill = colourText
				}
				c.SetColor(hexColour(fill))
				c.FillString(face, at(x, top+v.Y), v.Text)
			}
		}
		top += sc.H
	}
	_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
	return err
}

// hexColour reads "#rrggbb".
func hexColour(s string) color.Color {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	if err != nil || len(s) != 7 {
		return color.Black
	}
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}
