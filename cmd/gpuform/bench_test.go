package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/bench/report"
)

// benchDoc is the part of bench's JSON the tests read.
type benchDoc struct {
	FormatVersion string `json:"format_version"`
	Hosts         []struct {
		Host   string `json:"host"`
		Error  string `json:"error"`
		Layers []struct {
			Name     string   `json:"name"`
			Device   string   `json:"device"`
			Test     string   `json:"test"`
			Measured *float64 `json:"measured_gbps"`
			Expected *float64 `json:"expected_gbps"`
			Source   string   `json:"source"`
			Status   string   `json:"status"`
			Verdict  string   `json:"verdict"`
			Install  string   `json:"install"`
			Note     string   `json:"note"`
		} `json:"layers"`
		Scaling []struct {
			GPUs       int      `json:"gpus"`
			BusBW      *float64 `json:"busbw_gbps"`
			Efficiency *float64 `json:"efficiency"`
			Throughput *float64 `json:"throughput"`
		} `json:"scaling"`
		Bottleneck *struct {
			Layer   string `json:"layer"`
			Device  string `json:"device"`
			Message string `json:"message"`
			Fix     string `json:"fix"`
			Also    []struct {
				Layer  string `json:"layer"`
				Device string `json:"device"`
			} `json:"also"`
		} `json:"bottleneck"`
	} `json:"hosts"`
}

func decodeBench(t *testing.T, out string) benchDoc {
	t.Helper()
	var doc benchDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.FormatVersion != jsonformat.Version {
		t.Fatalf("format_version %q", doc.FormatVersion)
	}
	return doc
}

// checkSVG fails t unless the file is well-formed XML with an <svg> root
// holding both charts' titles.
func checkSVG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
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
		t.Fatalf("root element %q", root)
	}
	for _, title := range []string{report.LayersTitle, report.ScalingTitle} {
		if !strings.Contains(text.String(), title) {
			t.Errorf("%s has no chart titled %q", path, title)
		}
	}
}

// TestBenchMissingTools: on a simulated node without nvbandwidth,
// nccl-tests, perftest or fio every layer is "not measured" with the
// package to install, and bench exits 2 — a missing tool is never a pass.
func TestBenchMissingTools(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "bench.svg")
	code, out, errOut := runCLI(t, "", "bench", "-format", "json", "-plot", svg, "testdata/bench-missing")
	if code != ExitReport {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitReport, out, errOut)
	}
	doc := decodeBench(t, out)
	if len(doc.Hosts) != 1 || doc.Hosts[0].Error != "" || len(doc.Hosts[0].Layers) == 0 {
		t.Fatalf("hosts: %+v", doc.Hosts)
	}
	installs := map[string]string{}
	for _, l := range doc.Hosts[0].Layers {
		// nccl-tests has no package: its row says where to build it.
		hint := l.Install != "" || strings.Contains(l.Note, "build it from https://github.com/NVIDIA/nccl-tests")
		if l.Verdict != string(bench.VerdictNotMeasured) || !hint || l.Measured != nil {
			t.Errorf("%s %s: verdict %s, install %q, note %q", l.Name, l.Device, l.Verdict, l.Install, l.Note)
		}
		installs[l.Name+" "+l.Device] = l.Install
	}
	want := map[string]string{
		"hbm all GPUs": "nvbandwidth", "gpu_gpu all GPUs": "nvbandwidth", "gpu_gpu all_reduce": "",
		"host_gpu all GPUs": "nvbandwidth", "network all NICs": "perftest", "storage all paths": "fio",
	}
	if diff := cmp.Diff(want, installs); diff != "" {
		t.Errorf("packages to install (-want +got):\n%s", diff)
	}
	checkSVG(t, svg)
}

// TestBenchDegraded runs bench end to end on sim://hgx-h100-degraded,
// whose stand-ins replay real nvbandwidth, ib_write_bw, fio and
// all_reduce_perf captures with GPU 5's host copies and mlx5_3's RDMA
// writes halved: the bottleneck is host_gpu on GPU 5 with the link width
// named, and the slow NIC is reported, in text, JSON and the chart.
func TestBenchDegraded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	svg := filepath.Join(dir, "bench.svg")
	code, out, errOut := runCLI(t, "", "bench", "-plot", svg, "testdata/bench-degraded")
	if code != ExitReport {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitReport, out, errOut)
	}
	for _, want := range []string{
		"Bottleneck: host_gpu on GPU 5",
		"its PCIe link trained at x8 of x16",
		"Also below expectation: network on mlx5_3",
		`mlx5_3's link is up at "200 Gb/sec (4X HDR)"`,
		"hbm       device_local_copy: 8 devices",
		"all_reduce 8 GPUs busbw",
		"Chart written to",
	} {
		if !strings.Contains(out, want) && !strings.Contains(strings.ToLower(out), strings.ToLower(want)) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	checkSVG(t, svg)

	// The second run draws its chart as PNG, by the file's extension.
	jsonOut, pngOut := filepath.Join(dir, "bench.json"), filepath.Join(dir, "bench.png")
	code, out, errOut = runCLI(t, "", "bench", "-format", "json", "-out", jsonOut, "-plot", pngOut, "-layers", "host_gpu,network", "testdata/bench-degraded")
	if code != ExitReport {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if f, err := os.Open(pngOut); err != nil {
		t.Error(err)
	} else {
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width != 800 {
			t.Errorf("-plot %s: %v, %d px wide, want a PNG 800 px wide", pngOut, err, cfg.Width)
		}
	}
	b, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	doc := decodeBench(t, string(b))
	h := doc.Hosts[0]
	if h.Bottleneck == nil || h.Bottleneck.Layer != "host_gpu" || h.Bottleneck.Device != "GPU 5" || !strings.Contains(h.Bottleneck.Fix, "x8 of its x16") {
		t.Fatalf("bottleneck %+v", h.Bottleneck)
	}
	slowNIC := false
	for _, a := range h.Bottleneck.Also {
		slowNIC = slowNIC || (a.Layer == "network" && a.Device == "mlx5_3")
	}
	if !slowNIC {
		t.Errorf("the slow NIC is not reported: %+v", h.Bottleneck.Also)
	}
	for _, l := range h.Layers {
		if l.Name != "host_gpu" && l.Name != "network" {
			t.Errorf("-layers host_gpu,network measured %s", l.Name)
		}
		if l.Expected != nil && (l.Source == "" || l.Status == "") {
			t.Errorf("%s %s: expectation without source or status", l.Name, l.Device)
		}
	}
}

// TestBenchHealthy: the quickstart's sim://hgx-h100-stale replays the
// real captures unchanged: every layer is measured, none is below its
// expectation, the scaling curve has 2, 4 and 8 GPUs, and bench exits 0.
func TestBenchHealthy(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "", "bench", "-json", "../../examples/quickstart")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	doc := decodeBench(t, out)
	h := doc.Hosts[0]
	if h.Bottleneck != nil {
		t.Errorf("bottleneck on a healthy node: %+v", h.Bottleneck)
	}
	layers := map[string]bool{}
	for _, l := range h.Layers {
		layers[l.Name] = true
		if l.Verdict == "below" || l.Verdict == "not_measured" {
			t.Errorf("%s %s %s", l.Name, l.Device, l.Verdict)
		}
	}
	for _, l := range []string{"hbm", "gpu_gpu", "host_gpu", "network"} {
		if !layers[l] {
			t.Errorf("layer %s not measured", l)
		}
	}
	var gpus []int
	for _, p := range h.Scaling {
		gpus = append(gpus, p.GPUs)
	}
	if !slices.Equal(gpus, []int{2, 4, 8}) {
		t.Errorf("scaling points at %v GPUs", gpus)
	}
}

func TestBenchFlags(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"unknown layer": {[]string{"-layers", "hbm,nvlink"}, `unknown layer "nvlink"`},
		"bad format":    {[]string{"-format", "xml"}, "-format must be text or json"},
		"plot dir":      {[]string{"-plot", "/nonexistent/dir/x.svg"}, "-plot: /nonexistent/dir is not a directory"},
		"plot format":   {[]string{"-plot", "chart.pdf"}, "-plot chart.pdf: the chart's file must end in .svg or .png"},
		"unknown host":  {[]string{"-target", "gpu9"}, `no node in the spec has host "gpu9"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append(append([]string{"bench"}, tt.args...), "../../examples/quickstart")...)
			if code != ExitFailed || !strings.Contains(out+errOut, tt.want) {
				t.Errorf("exit %d, want %d and %q\n%s%s", code, ExitFailed, tt.want, out, errOut)
			}
		})
	}
}

// TestBenchBudget: a host whose tool hangs is stopped at the per-host
// budget and reported as not benched (exit 2), with the setting to raise.
func TestBenchBudget(t *testing.T) {
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	// The first run extracts the simulated node; the stand-in then sleeps
	// 30 s before answering (provision/sim's fault injection).
	if code, out, errOut := runCLIEnv(t, env, "bench", "-layers", "hbm", "testdata/bench-degraded"); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	sleep := filepath.Join(state, "hgx-h100-degraded", "var", "lib", "gpuform-sim", "sleep")
	if err := os.MkdirAll(sleep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sleep, "nvbandwidth"), []byte("30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, out, errOut := runCLIEnv(t, env, "bench", "-budget", "2s", "-layers", "hbm", "testdata/bench-degraded")
	if code != ExitReport || !strings.Contains(out, "the budget of 2s per host ran out before bench finished (raise it with -budget or bench { timeout })") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("bench took %s with a 2s budget", d)
	}
}

// TestBenchWorkload: the spec's bench command runs at each GPU count with
// {gpus} replaced, its throughput is read with the spec's pattern, and
// the efficiency is T(n) / (n × T(1)); on a node that runs here it needs
// -allow-local, and without it bench refuses before touching the host.
func TestBenchWorkload(t *testing.T) {
	code, out, errOut := runCLI(t, "", "bench", "-layers", "hbm", "testdata/bench-workload")
	if code != ExitFailed || !strings.Contains(errOut, `bench would run the spec's bench command "echo samples/s: {gpus}00" on the machine gpuform runs on; pass -allow-local`) {
		t.Fatalf("without -allow-local: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", "bench", "-allow-local", "-json", "-layers", "hbm", "testdata/bench-workload")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	got := map[int][2]float64{}
	for _, p := range decodeBench(t, out).Hosts[0].Scaling {
		if p.Throughput == nil || p.Efficiency == nil {
			t.Fatalf("point at %d GPUs without throughput or efficiency: %+v", p.GPUs, p)
		}
		got[p.GPUs] = [2]float64{*p.Throughput, *p.Efficiency}
	}
	want := map[int][2]float64{1: {100, 1}, 2: {200, 1}, 4: {400, 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scaling (-want +got):\n%s", diff)
	}
}

// TestBenchMultiNodeSlowNetwork: a group whose nodes are each healthy but
// whose multi-node all_reduce (a real capture of two nodes talking over
// one shared TCP interface) reaches a fifth of what one node does: the
// network is the bottleneck, and the group's point is on the curve.
func TestBenchMultiNodeSlowNetwork(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "", "bench", "-allow-local", "-json", "-layers", "gpu_gpu,network", "testdata/bench-multinode")
	if code != ExitReport {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	doc := decodeBench(t, out)
	if len(doc.Hosts) != 2 {
		t.Fatalf("%d hosts", len(doc.Hosts))
	}
	for _, h := range doc.Hosts {
		if h.Bottleneck == nil || h.Bottleneck.Layer != "network" || h.Bottleneck.Device != "all_reduce 2 nodes" {
			t.Errorf("%s: bottleneck %+v", h.Host, h.Bottleneck)
		}
		last := h.Scaling[len(h.Scaling)-1]
		if last.GPUs != 16 || last.BusBW == nil || *last.BusBW < 92 || *last.BusBW > 93 {
			t.Errorf("%s: last scaling point %+v", h.Host, last)
		}
	}
	// Without -allow-local the group's command does not run here; the
	// point is reported as not measured.
	code, out, _ = runCLI(t, "", "bench", "-json", "-layers", "network", "testdata/bench-multinode")
	if code != ExitReport || !strings.Contains(out, "allow it with -allow-local") {
		t.Errorf("without -allow-local: exit %d\n%s", code, out)
	}
}

// TestBenchSimIgnoresThisMachinesTools: a simulated node's PATH goes on to
// this machine's; a tool found there (here a fake fio that would run on
// this machine) is not the node's, and the layer is not measured.
func TestBenchSimIgnoresThisMachinesTools(t *testing.T) {
	bin := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(filepath.Join(bin, "fio"), []byte("#!/bin/sh\ntouch "+marker+"\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	code, out, errOut := runCLI(t, "", "bench", "-json", "-layers", "storage", "testdata/bench-missing")
	if code != ExitReport {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("bench ran this machine's fio for a simulated node")
	}
	if l := decodeBench(t, out).Hosts[0].Layers; len(l) != 1 || l[0].Verdict != "not_measured" || l[0].Install != "fio" {
		t.Errorf("layers %+v", l)
	}
}

// TestBenchPeerOutliers: bench over a group of two healthy simulated HGX
// H100 nodes and sim://hgx-h100-degraded (GPU 5, 0000:c3:00.0, at PCIe
// x8) flags that GPU by host and bus id as a peer outlier of host_gpu,
// and no GPU of the healthy hosts; the healthy hosts alone flag nothing
// and bench exits 0 — an outlier is a warning.
func TestBenchPeerOutliers(t *testing.T) {
	t.Parallel()
	type outlierRow struct {
		Host         string  `json:"host"`
		Device       string  `json:"device"`
		BusID        string  `json:"bus_id"`
		Layer        string  `json:"layer"`
		Metric       string  `json:"metric"`
		Value        float64 `json:"value"`
		Median       float64 `json:"median"`
		PercentBelow float64 `json:"percent_below"`
		Scope        string  `json:"scope"`
	}
	var doc struct {
		Outliers []outlierRow `json:"outliers"`
	}
	const degraded = "sim://hgx-h100-degraded/c"
	code, out, errOut := runCLI(t, "", "bench", "-json", "-layers", "host_gpu,hbm", "testdata/bench-outliers")
	// The degraded host's x8 link is a bottleneck too: that, not the
	// outlier, is why bench exits 2.
	if code != ExitReport {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitReport, out, errOut)
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	metrics := map[string]bool{}
	for _, o := range doc.Outliers {
		if o.Host != degraded || o.Device != "GPU 5" || o.BusID != "0000:c3:00.0" || o.Layer != "host_gpu" {
			t.Errorf("flagged %+v; only GPU 5 of %s should be", o, degraded)
			continue
		}
		if o.Value >= o.Median*0.9 || o.PercentBelow < 40 || o.Scope != "node" {
			t.Errorf("%+v: not its node's median less the margin", o)
		}
		metrics[o.Metric] = true
	}
	if !metrics["host_to_device"] || !metrics["device_to_host"] {
		t.Errorf("GPU 5's host copies not both flagged: %+v", doc.Outliers)
	}

	code, out, errOut = runCLI(t, "", "bench", "-layers", "host_gpu,hbm", "testdata/bench-outliers")
	if code != ExitReport {
		t.Fatalf("text: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"Warning: Peer outliers (more than 10% below the median of the same model",
		degraded + " GPU 5 (0000:c3:00.0): host_gpu host_to_device 27.7 GB/s, 50% below the node median 55.4 GB/s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}

	healthy := []string{"-target", "sim://hgx-h100-stale/a", "-target", "sim://hgx-h100-stale/b"}
	code, out, errOut = runCLI(t, "", append(append([]string{"bench", "-json", "-layers", "host_gpu,hbm"}, healthy...), "testdata/bench-outliers")...)
	if code != ExitOK {
		t.Fatalf("healthy hosts: exit %d\n%s\n%s", code, out, errOut)
	}
	doc.Outliers = nil
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Outliers == nil || len(doc.Outliers) != 0 {
		t.Errorf("healthy hosts: outliers %+v, want an empty array", doc.Outliers)
	}
	code, out, _ = runCLI(t, "", append(append([]string{"bench", "-layers", "host_gpu,hbm"}, healthy...), "testdata/bench-outliers")...)
	if code != ExitOK || strings.Contains(out, "Peer outliers") {
		t.Errorf("healthy hosts: exit %d\n%s", code, out)
	}
}

// TestBenchToolsInstalled: on a node without perftest and fio, bench
// reports network and storage as not measured with the package; the
// spec's bench { tools } puts both packages in the plan, apply installs
// them, bench then measures both layers, and verify's spec.bench_tools
// is converged.
func TestBenchToolsInstalled(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := "testdata/bench-tools"
	layers := func() map[string]string {
		t.Helper()
		_, out, errOut := runCLIEnv(t, env, "bench", "-format", "json", "-layers", "network,storage", dir)
		doc := decodeBench(t, out)
		if len(doc.Hosts) != 1 || doc.Hosts[0].Error != "" {
			t.Fatalf("hosts %+v\n%s", doc.Hosts, errOut)
		}
		got := map[string]string{}
		for _, l := range doc.Hosts[0].Layers {
			v := l.Verdict
			if l.Install != "" {
				v += " install " + l.Install
			}
			if prev, ok := got[l.Name]; !ok || prev == "ok" {
				got[l.Name] = v
			}
		}
		return got
	}
	before := layers()
	if diff := cmp.Diff(map[string]string{"network": "not_measured install perftest", "storage": "not_measured install fio"}, before); diff != "" {
		t.Fatalf("before apply (-want +got):\n%s", diff)
	}

	benchToolsCheck := func() string {
		t.Helper()
		_, hosts, out := verifyJSON(t, env, dir)
		for _, c := range hosts["sim://hgx-h100-notools"] {
			if c.ID == "spec.bench_tools" {
				return c.Status
			}
		}
		t.Fatalf("verify has no spec.bench_tools check:\n%s", out)
		return ""
	}
	if st := benchToolsCheck(); st != "fail" {
		t.Errorf("verify before apply: spec.bench_tools %s, want fail", st)
	}

	code, out, errOut := runCLIEnv(t, env, "plan", dir)
	if code != ExitOK {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "+ bench_tools") || !strings.Contains(out, `packages = "perftest, fio"`) {
		t.Fatalf("plan does not install the tools:\n%s", out)
	}
	code, out, errOut = runCLIEnv(t, env, "apply", "-auto-approve", dir)
	if code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}

	owners, err := os.ReadFile(filepath.Join(state, "hgx-h100-notools", "etc", "gpuform", "owners.json"))
	if err != nil || !strings.Contains(string(owners), `"bench_tools"`) {
		t.Errorf("apply did not record bench_tools as owned (%v):\n%s", err, owners)
	}
	after := layers()
	for _, l := range []string{"network", "storage"} {
		if v := after[l]; v == "" || strings.HasPrefix(v, "not_measured") {
			t.Errorf("%s after apply: %q", l, v)
		}
	}
	if st := benchToolsCheck(); st != "pass" {
		t.Errorf("verify after apply: spec.bench_tools %s, want pass", st)
	}
}
