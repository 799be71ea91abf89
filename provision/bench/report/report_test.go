package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
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
	kbase, err := kb.Load()
	if err != nil {
		t.Fatal(err)
	}
	const h100 = "H100 SXM5 80GB (HGX/DGX H100)"
	info := bench.HostInfo{Name: "gpu1", NUMA: map[int]string{0: "0-55", 1: "56-111"}, SpecBind: map[int]int{}, Pairing: map[int]string{}, Nodes: 1,
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
	h := bench.Judge(kbase, info, obs, nil, bench.Layers())
	// The outlier is written by hand: two GPUs are too few peers to flag
	// one (provision/bench's tests feed outlier.Flag for real).
	outliers := []bench.Outlier{{Host: "gpu1", Device: "GPU 1", BusID: "0000:9a:00.0", Model: h100, Layer: bench.LayerHostGPU, Metric: "host_to_device",
		Value: 26.3, Median: 55.4, PercentBelow: 52.5, Peers: 16, Scope: "fleet", MarginPercent: 10}}
	return &bench.Report{FormatVersion: jsonformat.Version, Layers: bench.Layers(), Hosts: []bench.Host{h, {Host: "gpu2", Error: "connect: dial tcp: connection refused"}}, Outliers: outliers}
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

// TestWriteSVG: the chart is well-formed XML and holds both charts.
func TestWriteSVG(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSVG(&b, degraded(t)); err != nil {
		t.Fatal(err)
	}
	CheckSVG(t, b.Bytes())
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
