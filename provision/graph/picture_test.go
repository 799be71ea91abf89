package graph

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// svgText is one <text> of a drawn picture, as the SVG says it.
type svgText struct {
	X, Y, Size float64
	Bold       bool
	Middle     bool
	Fill       string
	Text       string
}

// svgRect is one <rect>.
type svgRect struct {
	X, Y, W, H   float64
	Fill, Stroke string
}

// svgPicture is one nested <svg class="picture">.
type svgPicture struct {
	W, H  float64
	Texts []svgText
	Rects []svgRect
}

// parseSVG reads the pictures of an SVG document written by WriteSVG.
func parseSVG(t *testing.T, doc []byte) []svgPicture {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var pics []svgPicture
	var cur *svgText
	attr := func(e xml.StartElement, name string) string {
		for _, a := range e.Attr {
			if a.Name.Local == name {
				return a.Value
			}
		}
		return ""
	}
	f := func(e xml.StartElement, name string) float64 {
		v, err := strconv.ParseFloat(attr(e, name), 64)
		if err != nil {
			t.Fatalf("<%s %s=%q>: %v", e.Name.Local, name, attr(e, name), err)
		}
		return v
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch v := tok.(type) {
		case xml.StartElement:
			switch v.Name.Local {
			case "svg":
				if attr(v, "class") == "picture" {
					pics = append(pics, svgPicture{W: f(v, "width"), H: f(v, "height")})
				}
			case "rect":
				if len(pics) > 0 {
					p := &pics[len(pics)-1]
					p.Rects = append(p.Rects, svgRect{X: f(v, "x"), Y: f(v, "y"), W: f(v, "width"), H: f(v, "height"), Fill: attr(v, "fill"), Stroke: attr(v, "stroke")})
				}
			case "text":
				cur = &svgText{X: f(v, "x"), Y: f(v, "y"), Size: f(v, "font-size"), Bold: attr(v, "font-weight") == "bold", Middle: attr(v, "text-anchor") == "middle", Fill: attr(v, "fill")}
			}
		case xml.CharData:
			if cur != nil {
				cur.Text += string(v)
			}
		case xml.EndElement:
			if v.Name.Local == "text" && cur != nil {
				if len(pics) == 0 {
					t.Fatalf("text %q outside a picture", cur.Text)
				}
				pics[len(pics)-1].Texts = append(pics[len(pics)-1].Texts, *cur)
				cur = nil
			}
		}
	}
	if len(pics) == 0 {
		t.Fatal("SVG has no picture")
	}
	return pics
}

// box is a text's ink box: its advance in Liberation Sans (whose widths
// Arial and Helvetica share) and the face's ascent and descent.
type box struct{ x0, y0, x1, y1 float64 }

func textBox(f fonts, tx svgText) box {
	face := f.face(tx.Size, tx.Bold)
	ext := face.Extents()
	w := f.width(tx.Text, tx.Size, tx.Bold)
	x := tx.X
	if tx.Middle {
		x -= w / 2
	}
	return box{x, tx.Y - ext.Ascent.Points(), x + w, tx.Y + ext.Descent.Points()}
}

// checkPictures fails t unless every picture of the SVG fits (see
// pictureFaults); it returns the pictures.
func checkPictures(t *testing.T, doc []byte) []svgPicture {
	t.Helper()
	pics := parseSVG(t, doc)
	for _, fault := range pictureFaults(pics) {
		t.Error(fault)
	}
	return pics
}

// pictureFaults says where a picture does not fit a 1600 × 1000 screen
// with its smallest text at least 11 px there, where a text leaves its
// picture, and which two texts overlap.
func pictureFaults(pics []svgPicture) []string {
	f := newFonts()
	var faults []string
	for i, p := range pics {
		scale := min(1, 1600/p.W, 1000/p.H)
		boxes := make([]box, len(p.Texts))
		for j, tx := range p.Texts {
			if tx.Size*scale < 11 {
				faults = append(faults, fmt.Sprintf("picture %d (%gx%g, shown at %.2f): %q is %.1f px", i, p.W, p.H, scale, tx.Text, tx.Size*scale))
			}
			b := textBox(f, tx)
			if b.x0 < 0 || b.y0 < 0 || b.x1 > p.W || b.y1 > p.H {
				faults = append(faults, fmt.Sprintf("picture %d: %q at %+v leaves the %gx%g picture", i, tx.Text, b, p.W, p.H))
			}
			boxes[j] = b
		}
		for a := range boxes {
			for b := a + 1; b < len(boxes); b++ {
				p, q := boxes[a], boxes[b]
				// A line's descent may touch the next line's ascent by
				// a fraction of a pixel; overlap means ink over ink.
				const slack = 0.5
				if p.x0 < q.x1-slack && q.x0 < p.x1-slack && p.y0 < q.y1-slack && q.y0 < p.y1-slack {
					faults = append(faults, fmt.Sprintf("picture %d: %q %+v overlaps %q %+v", i, pics[i].Texts[a].Text, p, pics[i].Texts[b].Text, q))
				}
			}
		}
	}
	return faults
}

// TestPictureCheckFails: the check itself finds a picture too wide for
// the screen, two texts drawn over each other and a text past the edge.
func TestPictureCheckFails(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"too wide": `<svg><svg class="picture" width="3200" height="500"><text x="10" y="20" font-size="12">a</text></svg></svg>`,
		"overlap":  `<svg><svg class="picture" width="300" height="500"><text x="10" y="20" font-size="12">GPU0</text><text x="20" y="24" font-size="12">GPU1</text></svg></svg>`,
		"outside":  `<svg><svg class="picture" width="300" height="500"><text x="290" y="20" font-size="12">mlx5_0</text></svg></svg>`,
	} {
		if faults := pictureFaults(parseSVG(t, []byte(doc))); len(faults) != 1 {
			t.Errorf("%s: faults %q, want one", name, faults)
		}
	}
}

// TestPicturePNG: the PNG is the SVG's scene rasterised: the same size,
// and the problem badge drawn in red where the SVG puts it.
func TestPicturePNG(t *testing.T) {
	t.Parallel()
	pic := []Picture{{Hosts: []string{"sim://hgx-h100-degraded"}, Topology: FromFacts(factsRoot(t, "hgx-h100-degraded"), nil)}}
	var s, p bytes.Buffer
	if err := WriteSVG(&s, pic); err != nil {
		t.Fatal(err)
	}
	if err := WritePNG(&p, pic); err != nil {
		t.Fatal(err)
	}
	svg := checkPictures(t, s.Bytes())[0]
	img, err := png.Decode(&p)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); float64(b.Dx()) != svg.W || float64(b.Dy()) != svg.H {
		t.Errorf("PNG %dx%d, SVG %gx%g", b.Dx(), b.Dy(), svg.W, svg.H)
	}
	var badge *svgRect
	for i, r := range svg.Rects {
		if r.Fill == colourProblem {
			badge = &svg.Rects[i]
			break
		}
	}
	if badge == nil {
		t.Fatal("no problem badge in the SVG of a degraded node")
	}
	// A pixel inside the badge, off its number.
	r, g, b, _ := img.At(int(badge.X+2), int(badge.Y+badge.H/2)).RGBA()
	if got := fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8); got != colourProblem {
		t.Errorf("PNG at the badge is %s, want %s", got, colourProblem)
	}
}

// TestDocsPictures keeps the user guide's pictures (docs/guide/facts.md)
// what graph draws: the quickstart's node block on its host, and the same
// block on sim://hgx-h100-degraded, where GPU 5's x8 link and mlx5_3, a
// rail up at 200 Gb/s, are problems. -update rewrites them.
func TestDocsPictures(t *testing.T) {
	t.Parallel()
	cfg, diags := spec.Load(filepath.Join("..", "..", "examples", "quickstart"), spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	node := cfg.Nodes[0]
	for _, tc := range []struct {
		file, profile string
		want          []ProblemKind
	}{
		{"quickstart-node.svg", "hgx-h100-stale", nil},
		{"degraded-node.svg", "hgx-h100-degraded", []ProblemKind{ProblemLink, ProblemNICLink}},
	} {
		topo := FromFacts(factsRoot(t, tc.profile), node)
		var got []ProblemKind
		for _, p := range topo.Problems {
			got = append(got, p.Kind)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: problems (-want +got):\n%s", tc.file, diff)
		}
		var b bytes.Buffer
		if err := WriteSVG(&b, []Picture{{Nodes: []string{node.Name}, Hosts: []string{"sim://" + tc.profile}, Topology: topo}}); err != nil {
			t.Fatal(err)
		}
		checkPictures(t, b.Bytes())
		path := filepath.Join("..", "..", "docs", tc.file)
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, b.Bytes()) {
			t.Errorf("%s is not what graph draws (go test ./provision/graph -run TestDocsPictures -update)", path)
		}
	}
}

// TestPictureLargeNode: a node too wide for one row of sockets (four
// sockets of six GPUs, each under its own root port with a NIC) is laid
// out with its sockets in rows, still fitting the screen, with the
// NVLink band under each row and every GPU joined to it; an empty node
// draws too.
func TestPictureLargeNode(t *testing.T) {
	t.Parallel()
	topo := &Topology{Title: "4× test CPU", Source: SourceFacts, Fabric: &Fabric{Label: "NVLink · 8× NVSwitch", AllToAll: true}}
	gpu := 0
	for s := range 4 {
		topo.Boxes = append(topo.Boxes, Box{ID: socketID(s), Kind: KindSocket, Label: fmt.Sprintf("CPU socket %d", s), Detail: []string{"test CPU"}},
			Box{ID: numaID(s), Kind: KindNUMA, Label: fmt.Sprintf("NUMA %d", s), Parent: socketID(s), Detail: []string{"CPUs 0-63", "512 GiB"}})
		for range 6 {
			rp := fmt.Sprintf("pci:0000:%02x:01.0", gpu*8)
			topo.Boxes = append(topo.Boxes,
				Box{ID: rp, Kind: KindRootPort, Label: "root port", Detail: []string{fmt.Sprintf("%02x:01.0", gpu*8)}, Parent: numaID(s)},
				Box{ID: gpuID(gpu), Kind: KindGPU, Label: fmt.Sprintf("GPU%d", gpu), Detail: []string{"B200", fmt.Sprintf("0000:%02x:00.0", gpu*8+1)}, Parent: rp, Link: &Link{Gen: 5, Width: 16, MaxGen: 5, MaxWidth: 16}},
				Box{ID: nicID(fmt.Sprintf("mlx5_%d", gpu)), Kind: KindNIC, Label: fmt.Sprintf("mlx5_%d", gpu), Detail: []string{"ConnectX-7", "400 Gb/sec (4X NDR) InfiniBand"}, Parent: rp})
			topo.Fabric.Members = append(topo.Fabric.Members, gpuID(gpu))
			gpu++
		}
	}
	var b bytes.Buffer
	if err := WriteSVG(&b, []Picture{{Hosts: []string{"big"}, Topology: topo}, {Hosts: []string{"vm1"}, Topology: FromFacts(&facts.Node{}, nil)}}); err != nil {
		t.Fatal(err)
	}
	pics := checkPictures(t, b.Bytes())
	if len(pics) != 2 {
		t.Fatalf("%d pictures, want 2", len(pics))
	}
	bands := 0
	for _, r := range pics[0].Rects {
		if r.Fill == colourNVLink && r.W > 100 {
			bands++
		}
	}
	if bands < 2 {
		t.Errorf("%d NVLink bars for sockets in rows, want one a row", bands)
	}
	// Every GPU joined to a bar: one green line each.
	if n := strings.Count(b.String(), `stroke="`+colourNVLink+`"`); n != 24 {
		t.Errorf("%d NVLink joins, want 24", n)
	}
}

// TestSVGEscaping: names read from a host reach the SVG as text, so
// markup, quotes, invalid UTF-8 and control characters in them must not
// break the document; each is drawn as read, the unprintable as U+FFFD.
func TestSVGEscaping(t *testing.T) {
	t.Parallel()
	n := factsRoot(t, "l40s-rocky9")
	n.CPU.Model = `Evil <b>"CPU"</b> & ` + "\x01\xff"
	var b bytes.Buffer
	if err := WriteSVG(&b, []Picture{{Hosts: []string{`host"<1>`}, Topology: FromFacts(n, nil)}}); err != nil {
		t.Fatal(err)
	}
	pics := checkPictures(t, b.Bytes())
	var got []string
	for _, tx := range pics[0].Texts {
		if strings.Contains(tx.Text, "Evil") || strings.Contains(tx.Text, "host") {
			got = append(got, tx.Text)
		}
	}
	want := []string{`host"<1>`, "2× Evil <b>\"CPU\"</b> & \uFFFD\uFFFD (from facts)"}
	if diff := cmp.Diff(want, got[:2]); diff != "" {
		t.Errorf("texts (-want +got):\n%s", diff)
	}
}
