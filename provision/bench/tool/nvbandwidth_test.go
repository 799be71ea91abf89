package tool

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func open(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// cell is one value read by eye from a fixture, to check the parser put it
// at the right (row, column).
type cell struct {
	testcase string
	row, col int
	gbps     float64 // NaN: the file prints N/A
}

// TestNvbandwidthFixtures parses every real nvbandwidth output in testdata
// and checks the testcases found, their shapes and sums, and cells read from
// the files by eye.
func TestNvbandwidthFixtures(t *testing.T) {
	tests := []struct {
		file      string
		testcases []string
		shapes    [][2]int  // rows x cols per matrix
		sums      []float64 // SUM line (or the cells' sum when none)
		cells     []cell
		failsWith string // error wanted; matrices before it still returned
	}{
		// v0.10: indented labels, N/A diagonal, COEFFICIENT_OF_VARIATION,
		// four runs joined by "#####" lines, a latency matrix (skipped).
		{
			file:      "nvbandwidth-v0.10-8xH100-d2d-d2h-h2d-ce.txt",
			testcases: []string{"device_to_device_memcpy_read_ce", "device_to_device_memcpy_write_ce", "device_to_host_memcpy_ce", "host_to_device_memcpy_ce"},
			shapes:    [][2]int{{8, 8}, {8, 8}, {1, 8}, {1, 8}},
			sums:      []float64{22126.64, 22258.35, 441.72, 442.87},
			cells: []cell{
				{"device_to_device_memcpy_read_ce", 0, 0, math.NaN()},
				{"device_to_device_memcpy_read_ce", 7, 0, 395.05},
				{"device_to_device_memcpy_write_ce", 2, 7, 397.52},
				{"host_to_device_memcpy_ce", 0, 7, 55.33},
				{"device_to_host_memcpy_ce", 0, 6, 55.26},
			},
		},
		// v0.8: N/A diagonal; "..." where the reporter cut the header.
		{
			file:      "nvbandwidth-v0.8-6xA6000-d2d-read-issue50.txt",
			testcases: []string{"device_to_device_memcpy_read_ce"},
			shapes:    [][2]int{{6, 6}},
			sums:      []float64{715.53},
			cells:     []cell{{"device_to_device_memcpy_read_ce", 3, 5, 26.35}, {"device_to_device_memcpy_read_ce", 4, 4, math.NaN()}},
		},
		{
			file:      "nvbandwidth-v0.8-1xA100-h2d-sm-issue42.txt",
			testcases: []string{"host_to_device_memcpy_sm"},
			shapes:    [][2]int{{1, 1}},
			sums:      []float64{25.13},
			cells:     []cell{{"host_to_device_memcpy_sm", 0, 0, 25.13}},
		},
		// README of v0.8: labels flush left, 0.00 diagonal, no SUM line.
		{
			file:      "nvbandwidth-readme-v0.8-8gpu-d2d-write.txt",
			testcases: []string{"device_to_device_memcpy_write_ce"},
			shapes:    [][2]int{{8, 8}},
			sums:      []float64{sumReadme},
			cells:     []cell{{"device_to_device_memcpy_write_ce", 6, 0, 274.89}, {"device_to_device_memcpy_write_ce", 1, 1, 0}},
		},
		// No "Running" and no SUM: the playbook quotes the matrix only;
		// the title names the testcase.
		{
			file:      "nvbandwidth-8xH100-device-local-copy-smol-playbook.txt",
			testcases: []string{"device_local_copy"},
			shapes:    [][2]int{{1, 8}},
			sums:      []float64{1519.07 + 1518.93 + 1519.07 + 1519.60 + 1519.13 + 1518.86 + 1519.13 + 1519.33},
			cells:     []cell{{"device_local_copy", 0, 3, 1519.60}},
		},
		// v0.6 test data of SuperBench: "Waived:" lines, latency matrix.
		{
			file: "nvbandwidth-v0.6-gh200-superbench-testdata.log",
			testcases: []string{
				"host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "host_to_device_bidirectional_memcpy_ce", "device_to_host_bidirectional_memcpy_ce",
				"all_to_host_memcpy_ce", "all_to_host_bidirectional_memcpy_ce", "host_to_all_memcpy_ce", "host_to_all_bidirectional_memcpy_ce",
				"host_to_device_memcpy_sm", "device_to_host_memcpy_sm", "all_to_host_memcpy_sm", "all_to_host_bidirectional_memcpy_sm", "host_to_all_memcpy_sm", "host_to_all_bidirectional_memcpy_sm",
			},
			cells: []cell{{"host_to_device_memcpy_ce", 1, 2, 312.11}, {"host_to_all_bidirectional_memcpy_sm", 0, 0, 247.56}},
		},
		// v0.2, cut by the stored copy in the middle of a row:
		// the two complete testcases come back with the error.
		{
			file:      "nvbandwidth-v0.2-8xRTX4090-issue15.txt",
			testcases: []string{"host_to_device_memcpy_ce", "device_to_host_memcpy_ce"},
			shapes:    [][2]int{{1, 8}, {1, 8}},
			sums:      []float64{205.04, 214.28},
			cells:     []cell{{"host_to_device_memcpy_ce", 0, 2, 23.90}},
			failsWith: `"host_to_device_bidirectional_memcpy_ce" row 0: 3 values for 8 columns`,
		},
		{
			file:      "nvbandwidth-v0.7-8xA100-assert-issue34.txt",
			failsWith: "nvbandwidth failed: device_to_device_memcpy_read_ce: ASSERT in expression h_errorFlag == 0",
		},
		{
			file:      "nvbandwidth-v0.2-2xRTX2080Ti-waived-issue13.txt",
			failsWith: "nvbandwidth waived device_to_device_memcpy_write_ce",
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ms, err := ParseNvbandwidth(open(t, tt.file))
			checkMatrices(t, ms, err, tt.testcases, tt.shapes, tt.sums, tt.cells, tt.failsWith)
		})
	}
}

// sumReadme is the sum of the README's matrix, which prints no SUM line.
var sumReadme = func() float64 {
	rows := []string{
		"0.00 276.07 276.36 276.14 276.29 276.48 276.55 276.33",
		"276.19 0.00 276.29 276.29 276.57 276.48 276.38 276.24",
		"276.33 276.29 0.00 276.38 276.50 276.50 276.29 276.31",
		"276.19 276.62 276.24 0.00 276.29 276.60 276.29 276.55",
		"276.03 276.55 276.45 276.76 0.00 276.45 276.36 276.62",
		"276.17 276.57 276.19 276.50 276.31 0.00 276.31 276.15",
		"274.89 276.41 276.38 276.67 276.41 276.26 0.00 276.33",
		"276.12 276.45 276.12 276.36 276.00 276.57 276.45 0.00",
	}
	var s float64
	for _, r := range rows {
		v, _ := cells(strings.Fields(r), 8)
		for _, x := range v {
			s += x
		}
	}
	return s
}()

func checkMatrices(t *testing.T, ms []Matrix, err error, testcases []string, shapes [][2]int, sums []float64, want []cell, failsWith string) {
	t.Helper()
	switch {
	case failsWith == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case failsWith != "" && (err == nil || !strings.Contains(err.Error(), failsWith)):
		t.Fatalf("error = %v, want one containing %q", err, failsWith)
	}
	if testcases != nil {
		var got []string
		for _, m := range ms {
			got = append(got, m.Testcase)
		}
		if strings.Join(got, ",") != strings.Join(testcases, ",") {
			t.Errorf("testcases = %v\nwant %v", got, testcases)
		}
	}
	for i, s := range shapes {
		if i >= len(ms) {
			t.Fatalf("%d matrices, want %d", len(ms), len(shapes))
		}
		m := ms[i]
		if len(m.Rows) != s[0] || len(m.Cols) != s[1] || len(m.GBps) != s[0] {
			t.Errorf("%s: shape %dx%d, want %dx%d", m.Testcase, len(m.Rows), len(m.Cols), s[0], s[1])
		}
	}
	for i, s := range sums {
		if math.Abs(ms[i].SumGBps-s) > 0.005 {
			t.Errorf("%s: sum %.2f, want %.2f", ms[i].Testcase, ms[i].SumGBps, s)
		}
	}
	for _, c := range want {
		var m *Matrix
		for i := range ms {
			if ms[i].Testcase == c.testcase {
				m = &ms[i]
			}
		}
		if m == nil {
			t.Errorf("no matrix %q", c.testcase)
			continue
		}
		v, ok := m.Value(c.row, c.col)
		if math.IsNaN(c.gbps) {
			if ok {
				t.Errorf("%s[%d][%d] = %v, want N/A", c.testcase, c.row, c.col, v)
			}
			continue
		}
		if !ok || v != c.gbps {
			t.Errorf("%s[%d][%d] = %v (%v), want %v", c.testcase, c.row, c.col, v, ok, c.gbps)
		}
	}
}

// TestNvbandwidthJSONMatchesText parses the JSON transcription of issue
// 50's matrix and checks it gives the same matrix as the text capture.
func TestNvbandwidthJSONMatchesText(t *testing.T) {
	fromJSON, err := ParseNvbandwidthJSON(open(t, "nvbandwidth-json-transcribed-from-issue50.json"))
	if err != nil {
		t.Fatal(err)
	}
	fromText, err := ParseNvbandwidth(open(t, "nvbandwidth-v0.8-6xA6000-d2d-read-issue50.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fromJSON) != 1 || len(fromText) != 1 {
		t.Fatalf("matrices: json %d, text %d", len(fromJSON), len(fromText))
	}
	j, x := fromJSON[0], fromText[0]
	if j.Testcase != x.Testcase || j.Description != x.Description || j.SumGBps != x.SumGBps {
		t.Errorf("json %q %q %v, text %q %q %v", j.Testcase, j.Description, j.SumGBps, x.Testcase, x.Description, x.SumGBps)
	}
	for _, r := range x.Rows {
		for _, c := range x.Cols {
			xv, xok := x.Value(r, c)
			jv, jok := j.Value(r, c)
			if xv != jv && !(math.IsNaN(xv) && math.IsNaN(jv)) || xok != jok {
				t.Errorf("[%d][%d]: json %v %v, text %v %v", r, c, jv, jok, xv, xok)
			}
		}
	}
}

// TestNvbandwidthErrors covers outputs that must be a clear error: each
// is built from a real fixture by cutting or damaging it (named in the
// case), or is a shape json_output.cpp writes for failed runs.
func TestNvbandwidthErrors(t *testing.T) {
	h100, err := os.ReadFile(filepath.Join("testdata", "nvbandwidth-v0.10-8xH100-d2d-d2h-h2d-ce.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(h100)
	cutAt := func(marker string) string { return s[:strings.Index(s, marker)+len(marker)] }
	tests := []struct {
		name, in, json, wantErr string
		matrices                int
	}{
		{name: "empty", in: "", wantErr: "no nvbandwidth bandwidth matrix"},
		{name: "garbage", in: "\x00\xff{{{ 1 2 3\n", wantErr: "no nvbandwidth bandwidth matrix"},
		{name: "command not found", in: "bash: nvbandwidth: command not found\n", wantErr: "no nvbandwidth bandwidth matrix"},
		// v0.5+ print "Waived: " without the testcase (output.cpp).
		{name: "waived v0.5", in: "nvbandwidth Version: v0.8\n\nWaived: \n", wantErr: "nvbandwidth waived a testcase"},
		// nvbandwidth's answer to an unknown -t (nvbandwidth.cpp, v0.8).
		{name: "unknown testcase", in: "nvbandwidth Version: v0.8\n\nERROR: Testcase foo not found!\n", wantErr: "nvbandwidth failed: ERROR: Testcase foo not found!"},
		// The H100 capture cut after a matrix title, after the column
		// header, and in the middle of a row.
		{name: "cut after title", in: cutAt("memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n"), wantErr: "without its column header"},
		{name: "cut after column header", in: cutAt("memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n           0         1         2         3         4         5         6         7\n"), wantErr: "has no rows"},
		{name: "cut in a row", in: cutAt(" 3    395.08    395.08    395.23"), wantErr: "row 3: 3 values for 8 columns"},
		{name: "bad cell", in: strings.Replace(s, "395.23", "39x.23", 1), wantErr: `bad value "39x.23"`},
		{name: "json top error", json: `{"nvbandwidth": {"error": "cuInit failed: CUDA_ERROR_NO_DEVICE", "testcases": []}}`, wantErr: "nvbandwidth failed: cuInit failed"},
		{name: "json waived", json: `{"nvbandwidth": {"testcases": [{"name": "device_to_device_memcpy_write_ce", "status": "Waived"}]}}`, wantErr: "device_to_device_memcpy_write_ce waived"},
		{name: "json cut", json: `{"nvbandwidth": {"testcases": [{"name": "x", "status": "Passed", "bandwidth_matrix": [["1.0", `, wantErr: "nvbandwidth JSON"},
		{name: "json not nvbandwidth", json: `{"jobs": []}`, wantErr: `no "nvbandwidth" object`},
		{name: "json ragged", json: `{"nvbandwidth": {"testcases": [{"name": "x", "status": "Passed", "bandwidth_matrix": [["1.0", "2.0"], ["3.0"]]}]}}`, wantErr: "row 1 has 1 values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ms []Matrix
			var err error
			if tt.json != "" {
				ms, err = ParseNvbandwidthJSON(strings.NewReader(tt.json))
			} else {
				ms, err = ParseNvbandwidth(strings.NewReader(tt.in))
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q (matrices %d)", err, tt.wantErr, len(ms))
			}
		})
	}
}
