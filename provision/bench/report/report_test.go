package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/internal/palette"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/bench"
)

var update = flag.Bool("update", false, "rewrite golden files")

// degraded judges a two-GPU host whose GPU 1 trained at x8 and whose
// second NIC came up at half rate, with a workload that stops scaling.
func degraded(t *testing.T) *bench.Report {
	t.Helper()
	h := judged(t, "gpu1", false)
	const h100 = "H100 SXM5 80GB (HGX/DGX H100)"
	// The outlier is written by hand: two GPUs are too few peers to flag
	// one (provision/bench's tests feed outlier.Flag for real).
	outliers := []bench.Outlier{{Host: "gpu1", Device: "GPU 1", BusID: "0000:9a:00.0", Model: h100, Layer: bench.LayerHostGPU, Metric: "host_to_device",
		Value: 26.3, Median: 55.4, PercentBelow: 52.5, Peers: 16, Scope: "fleet", MarginPercent: 10}}
	return &bench.Report{FormatVersion: jsonformat.Version, Layers: bench.Layers(), Hosts: []bench.Host{h, {Host: "gpu2", Error: "connect: dial tcp: connection refused"}}, Outliers: outliers}
}

// judged is degraded's two-GPU host named name, judged by bench.Judge;
// reseated, GPU 1 trained at x16 and its host copies run at GPU 0's
// rate, so the NIC at half rate is what remains.
func judged(t *testing.T, name string, reseated bool) bench.Host {
	t.Helper()
	kbase, err := kb.Load()
	if err != nil {
		t.Fatal(err)
	}
	const h100 = "H100 SXM5 80GB (HGX/DGX H100)"
	info := bench.HostInfo{Name: name, NUMA: map[int]string{0: "0-55", 1: "56-111"}, SpecBind: map[int]int{}, Pairing: map[int]string{}, Nodes: 1,
		GPUs: []bench.GPU{
			{Index: 0, Address: "0000:18:00.0", NUMA: 0, Model: h100, Gen: 5, MaxGen: 5, Width: 16, MaxWidth: 16},
			{Index: 1, Address: "0000:9a:00.0", NUMA: 1, Model: h100, Gen: 5, MaxGen: 5, Width: 8, MaxWidth: 16},
		},
		NICs: []bench.NIC{
			{Name: "mlx5_0", Port: 1, RateGbps: 400, RateText: "400 Gb/sec (4X NDR)", LinkLayer: "InfiniBand"},
			{Name: "mlx5_1", Port: 1, RateGbps: 200, RateText: "200 Gb/sec (4X HDR)", LinkLayer: "InfiniBand"},
		},
	}
	obs := bench.Observations{
		HBM:          map[int]float64{0: 1519, 1: 1518},
		Peer:         map[bench.Pair]float64{{Src: 0, Dst: 1}: 395, {Src: 1, Dst: 0}: 395},
		HostToDevice: map[int]map[int]float64{0: {0: 55.6, 1: 20.1}, 1: {0: 41.2, 1: 26.3}},
		DeviceToHost: map[int]map[int]float64{0: {0: 55.1, 1: 19.8}, 1: {0: 40.9, 1: 26.1}},
		AllReduce:    map[int]float64{2: 361},
		NICs:         map[string]float64{"mlx5_0": 49.2, "mlx5_1": 24.4},
		Workload:     map[int]float64{1: 100, 2: 150},
		Missing:      map[string]bench.Missing{"storage": {Tool: "fio", Package: "fio"}},
		Binding:      "numactl",
	}
	if reseated {
		info.GPUs[1].Width = 16
		obs.HostToDevice[1][1] = 55.6
		obs.DeviceToHost[1][1] = 55.1
	}
	return bench.Judge(kbase, info, obs, nil, bench.Layers())
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update after checking):\n%s", name, got)
	}
}

func TestWriteText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, degraded(t), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "degraded.txt", b.Bytes())
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, degraded(t)); err != nil {
		t.Fatal(err)
	}
	type bottleneckJSON struct {
		Layer  string `json:"layer"`
		Device string `json:"device"`
	}
	type scalingJSON struct {
		GPUs          int      `json:"gpus"`
		Nodes         int      `json:"nodes"`
		BusBW         *float64 `json:"busbw_gbps"`
		ExpectedBusBW *float64 `json:"expected_busbw_gbps"`
		Throughput    *float64 `json:"throughput"`
		Efficiency    *float64 `json:"efficiency"`
		EfficiencyOf  string   `json:"efficiency_of"`
	}
	var doc struct {
		FormatVersion string `json:"format_version"`
		Hosts         []struct {
			Layers []struct {
				Name     string   `json:"name"`
				Device   string   `json:"device"`
				Measured *float64 `json:"measured_gbps"`
				Expected *float64 `json:"expected_gbps"`
				Source   string   `json:"source"`
				Status   string   `json:"status"`
			} `json:"layers"`
			Scaling    []scalingJSON   `json:"scaling"`
			Bottleneck *bottleneckJSON `json:"bottleneck"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.FormatVersion != jsonformat.Version || len(doc.Hosts) != 2 {
		t.Fatalf("format_version %q, %d hosts", doc.FormatVersion, len(doc.Hosts))
	}
	h := doc.Hosts[0]
	// GPU 1 trained at x8: the host-to-GPU layer is the bottleneck.
	if diff := cmp.Diff(&bottleneckJSON{Layer: "host_gpu", Device: "GPU 1"}, h.Bottleneck); diff != "" {
		t.Errorf("bottleneck (-want +got):\n%s", diff)
	}
	for _, l := range h.Layers {
		if l.Expected != nil && (l.Source == "" || l.Status == "") {
			t.Errorf("%s %s has an expectation without source or status", l.Name, l.Device)
		}
	}
	// From degraded's observations: the workload ran at 100 on one GPU
	// and 150 on two (efficiency 150/(2×100) = 0.75, judged on the
	// workload); all_reduce ran only on two, at 361 GB/s against 450,
	// H100's 450 GB/s of unidirectional NVLink times 2(n-1)/n at n = 2.
	f := func(v float64) *float64 { return &v }
	wantScaling := []scalingJSON{
		{GPUs: 1, Nodes: 1, Throughput: f(100), Efficiency: f(1), EfficiencyOf: "workload"},
		{GPUs: 2, Nodes: 1, BusBW: f(361), ExpectedBusBW: f(450), Throughput: f(150), Efficiency: f(0.75), EfficiencyOf: "workload"},
	}
	if diff := cmp.Diff(wantScaling, h.Scaling); diff != "" {
		t.Errorf("scaling (-want +got):\n%s", diff)
	}
	golden(t, "degraded.json", b.Bytes())
}

// TestWriteSVG: the chart is well-formed XML with both panels; shown
// 800 px wide no text is under 11 px; the bottleneck's bar (host_gpu on
// GPU 1, 41 %) is the one bar in the bottleneck's colour, with its value
// beside it, the other layers below expectation (the NIC at 49 %, GPU 1's
// host_to_device at 42 %) in the second colour, the rest muted.
func TestWriteSVG(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSVG(&b, degraded(t)); err != nil {
		t.Fatal(err)
	}
	CheckSVG(t, b.Bytes())
	doc := b.String()
	m := regexp.MustCompile(`viewBox="0 0 ([0-9.]+) [0-9.]+"`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("no viewBox:\n%.300s", doc)
	}
	width, _ := strconv.ParseFloat(m[1], 64)
	sizes := regexp.MustCompile(`font-size:([0-9.]+)px`).FindAllStringSubmatch(doc, -1)
	if len(sizes) == 0 {
		t.Fatal("no text sizes in the SVG")
	}
	for _, sz := range sizes {
		if v, _ := strconv.ParseFloat(sz[1], 64); v*800/width < 11 {
			t.Errorf("text of %s user units is %.1f px at 800 px wide", sz[1], v*800/width)
		}
	}
	// Bars are filled paths; count them by colour.
	fills := map[string]int{}
	for _, f := range regexp.MustCompile(`<path d="[^"]*"\s*style="fill:(#[0-9A-F]{6})"`).FindAllStringSubmatch(doc, -1) {
		fills[f[1]]++
	}
	// One bottleneck bar plus its legend swatch; two bars below
	// expectation plus a swatch; the ok layers (hbm, gpu_gpu device to
	// device, gpu_gpu all_reduce, host_gpu GPU 0's copies are in the same
	// groups as GPU 1's and so not drawn) plus a swatch.
	want := map[string]int{"#D62728": 2, "#FF7F0E": 3, "#B4B4B4": 4}
	for c, n := range want {
		if fills[c] != n {
			t.Errorf("%d paths filled %s, want %d (all fills: %v)", fills[c], c, n, fills)
		}
	}
	if !strings.Contains(doc, ">41%</text>") && !strings.Contains(doc, "> 41%</text>") {
		t.Errorf("the bottleneck's value 41%% is not written beside its bar")
	}
}

// TestWritePNG: the PNG chart is 800 pixels wide, as tall as the SVG
// at 96 dpi.
func TestWritePNG(t *testing.T) {
	var p, s bytes.Buffer
	if err := WritePNG(&p, degraded(t)); err != nil {
		t.Fatal(err)
	}
	if err := WriteSVG(&s, degraded(t)); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&p)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`viewBox="0 0 ([0-9.]+) ([0-9.]+)"`).FindStringSubmatch(s.String())
	h, _ := strconv.ParseFloat(m[2], 64)
	if b := img.Bounds(); b.Dx() != 800 || math.Abs(float64(b.Dy())-h*96/72) > 1 {
		t.Errorf("PNG %dx%d, want 800x%.0f", b.Dx(), b.Dy(), h*96/72)
	}
}

// TestPlotFormat: -plot's format is its file's extension.
func TestPlotFormat(t *testing.T) {
	for path, want := range map[string]string{"a/chart.svg": "svg", "chart.PNG": "png", "chart.pdf": "", "chart": ""} {
		got, err := PlotFormat(path)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("PlotFormat(%q) = %q, %v; want %q", path, got, err, want)
		}
	}
}

// CheckSVG fails t unless svg is well-formed XML with an <svg> root and
// the titles of both charts; the CLI tests call it too.
func CheckSVG(t *testing.T, svg []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	root := ""
	var text strings.Builder
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
			if root == "" {
				root = v.Name.Local
			}
		case xml.CharData:
			text.Write(v)
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	for _, title := range []string{LayersTitle, ScalingTitle} {
		if !strings.Contains(text.String(), title) {
			t.Errorf("SVG has no chart titled %q", title)
		}
	}
}

// TestWriteTextColor: with colour the bottleneck and a host's error are
// the red of verify's FAIL (gpuform's one palette), a passing layer its
// green; stripped of the escapes the text is the plain report.
func TestWriteTextColor(t *testing.T) {
	var plain, colored bytes.Buffer
	if err := WriteText(&plain, degraded(t), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteText(&colored, degraded(t), TextOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	red, green := "\x1b["+string(palette.Fail)+"m", "\x1b["+string(palette.Pass)+"m"
	for _, want := range []string{red + "Bottleneck:\x1b[0m", red + "Error:\x1b[0m", green + "ok\x1b[0m"} {
		if !strings.Contains(colored.String(), want) {
			t.Errorf("want %q in the coloured report", want)
		}
	}
	if bytes.Contains(plain.Bytes(), []byte("\x1b[")) {
		t.Error("the plain report has escapes")
	}
	if got := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(colored.String(), ""); got != plain.String() {
		t.Errorf("coloured report without its escapes differs from the plain one:\n%s", got)
	}
}

// TestWriteTextFoldsIdenticalHosts: hosts whose blocks would read the
// same are one block under a folded range, as plan, verify and facts
// write them; a host that differs in anything (a measurement, an error's
// text, its GPU count) keeps a block of its own, and the summary still
// counts every host.
func TestWriteTextFoldsIdenticalHosts(t *testing.T) {
	// Each host is judged under its own name, as bench does: the name
	// must not reach the block's text, or no two blocks would match.
	slowAs := func(name string) bench.Host { return judged(t, name, false) }
	fastAs := func(name string) bench.Host { return judged(t, name, true) }
	down := bench.Host{Error: "connect: dial tcp: connection refused"}
	named := func(h bench.Host, name string) bench.Host {
		h.Host = name
		return h
	}
	otherError := down
	otherError.Error = "connect: dial tcp: no route to host"
	tests := []struct {
		name   string
		hosts  []bench.Host
		titles []string
		sum    string
	}{
		{
			name:   "one host",
			hosts:  []bench.Host{slowAs("gpu01")},
			titles: []string{"gpu01 (2 × H100 SXM5 80GB (HGX/DGX H100))"},
			sum:    "Bench: 1 host(s), 1 with a bottleneck, 0 could not be benched, 0 measurement(s) not made.",
		},
		{
			name:   "four identical hosts fold",
			hosts:  []bench.Host{slowAs("gpu01"), slowAs("gpu02"), slowAs("gpu03"), slowAs("gpu04")},
			titles: []string{"gpu[01-04] (4 hosts) (2 × H100 SXM5 80GB (HGX/DGX H100))"},
			sum:    "Bench: 4 host(s), 4 with a bottleneck, 0 could not be benched, 0 measurement(s) not made.",
		},
		{
			name: "a different measurement keeps its own block, in first-seen order",
			hosts: []bench.Host{slowAs("gpu01"), fastAs("gpu02"), slowAs("gpu03"), slowAs("gpu04"),
				named(down, "gpu05"), named(down, "gpu07"), named(otherError, "gpu06")},
			titles: []string{
				"gpu[01,03-04] (3 hosts) (2 × H100 SXM5 80GB (HGX/DGX H100))",
				"gpu02 (2 × H100 SXM5 80GB (HGX/DGX H100))",
				"gpu[05,07] (2 hosts)",
				"gpu06",
			},
			sum: "Bench: 7 host(s), 4 with a bottleneck, 3 could not be benched, 0 measurement(s) not made.",
		},
		{
			name:   "simulated hosts fold by their last number",
			hosts:  []bench.Host{named(down, "sim://hgx-h100/gpu01"), named(down, "sim://hgx-h100/gpu02")},
			titles: []string{"sim://hgx-h100/gpu[01-02] (2 hosts)"},
			sum:    "Bench: 2 host(s), 0 with a bottleneck, 2 could not be benched, 0 measurement(s) not made.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := WriteText(&b, &bench.Report{Hosts: tt.hosts}, TextOptions{}); err != nil {
				t.Fatal(err)
			}
			// A block's title is the one unindented line before the
			// summary; everything in a block is indented.
			var titles []string
			var sum string
			for _, line := range strings.Split(b.String(), "\n") {
				switch {
				case strings.HasPrefix(line, "Bench: "):
					sum = line
				case line != "" && !strings.HasPrefix(line, " "):
					titles = append(titles, line)
				}
			}
			if diff := cmp.Diff(tt.titles, titles); diff != "" {
				t.Errorf("block titles (-want +got):\n%s\n%s", diff, b.String())
			}
			if sum != tt.sum {
				t.Errorf("summary %q, want %q", sum, tt.sum)
			}
		})
	}
	t.Run("golden", func(t *testing.T) {
		t.Parallel()
		var b bytes.Buffer
		r := &bench.Report{Hosts: []bench.Host{slowAs("gpu01"), fastAs("gpu02"), slowAs("gpu03"), named(down, "gpu04"), named(down, "gpu05")}}
		if err := WriteText(&b, r, TextOptions{}); err != nil {
			t.Fatal(err)
		}
		golden(t, "fleet.txt", b.Bytes())
	})
}
