package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
// nccl-tests or perftest every layer is "not measured" with the package to
// install, and bench exits 2 — a missing tool is never a pass.
func TestBenchMissingTools(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "bench.svg")
	code, out, errOut := runCLI(t, "", "bench", "-format", "json", "-plot", svg, "../../examples/quickstart")
	if code != ExitReport {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitReport, out, errOut)
	}
	doc := decodeBench(t, out)
	if len(doc.Hosts) != 1 || doc.Hosts[0].Error != "" || len(doc.Hosts[0].Layers) == 0 {
		t.Fatalf("hosts: %+v", doc.Hosts)
	}
	for _, l := range doc.Hosts[0].Layers {
		if l.Verdict != string(bench.VerdictNotMeasured) || l.Install == "" || l.Measured != nil {
			t.Errorf("%s %s: verdict %s, install %q", l.Name, l.Device, l.Verdict, l.Install)
		}
	}
	checkSVG(t, svg)
}

func TestBenchFlags(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"unknown layer": {[]string{"-layers", "hbm,nvlink"}, `unknown layer "nvlink"`},
		"bad format":    {[]string{"-format", "xml"}, "-format must be text or json"},
		"plot dir":      {[]string{"-plot", "/nonexistent/dir/x.svg"}, "-plot: /nonexistent/dir is not a directory"},
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
