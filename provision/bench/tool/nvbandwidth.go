package tool

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Matrix is one nvbandwidth testcase: bandwidth in GB/s per (row, column)
// device pair, NaN where nvbandwidth printed N/A. For host testcases the
// single row is the CPU (row 0) and the columns are GPUs; for
// device_local_copy the columns are GPUs; for device-to-device testcases
// rows and columns are GPUs and the diagonal is N/A (0.00 before v0.5).
type Matrix struct {
	// Testcase is the testcase name ("host_to_device_memcpy_ce"), from
	// its "Running …" or SUM line, or for device_local_copy its title;
	// empty when the output shows none of them.
	Testcase string
	// Description is the matrix title nvbandwidth prints, which says
	// the direction: "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)".
	Description string
	// Rows and Cols are the device indices printed at the left and top.
	Rows, Cols []int
	// GBps holds one slice per row, one value per column.
	GBps [][]float64
	// SumGBps is the SUM line nvbandwidth printed, else the sum of the
	// measured cells (what nvbandwidth's SUM is).
	SumGBps float64
}

// Value returns the bandwidth from row device r to column device c, and
// false when either is not in the matrix or the cell was N/A.
func (m Matrix) Value(r, c int) (float64, bool) {
	ri, ci := index(m.Rows, r), index(m.Cols, c)
	if ri < 0 || ci < 0 || ri >= len(m.GBps) || ci >= len(m.GBps[ri]) {
		return 0, false
	}
	v := m.GBps[ri][ci]
	return v, !math.IsNaN(v)
}

func index(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// sum adds the measured cells of m.
func (m Matrix) sum() float64 {
	var s float64
	for _, row := range m.GBps {
		for _, v := range row {
			if !math.IsNaN(v) {
				s += v
			}
		}
	}
	return s
}

// ParseNvbandwidth reads nvbandwidth's text output: the matrix layouts of
// v0.2 to v0.10 (row labels flush left before v0.5, indented after; 0.00
// or N/A on the diagonal; COEFFICIENT_OF_VARIATION lines from v0.9), several
// runs concatenated, and lines around the output (a shell prompt, a
// launcher's prefix-free log). Latency testcases (values in ns) are
// skipped: they are not bandwidth.
//
// It returns an error when the output holds no bandwidth matrix (naming
// the waived testcases or nvbandwidth's error line when it printed one),
// when a matrix is cut short or malformed, or when a testcase started but
// failed (ASSERT, CUDA error); in the last case the matrices measured
// before the failure are returned with the error.
func ParseNvbandwidth(r io.Reader) ([]Matrix, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var (
		out     []Matrix
		running string // testcase of the last "Running" line without a matrix yet
		waived  []string
		failure string
		cur     *Matrix // matrix being read
		skip    bool    // inside a latency matrix
		latency bool    // the last matrix title was a latency one
		lineNo  int
	)
	finish := func() error {
		if cur == nil {
			return nil
		}
		m := cur
		cur = nil
		if len(m.Cols) == 0 {
			return fmt.Errorf("nvbandwidth output ends after the title %q without its column header", m.Description)
		}
		if len(m.GBps) == 0 {
			return fmt.Errorf("nvbandwidth matrix %q has no rows: output cut short", label(*m))
		}
		m.SumGBps = m.sum()
		if m.Testcase == "" && strings.HasPrefix(m.Description, "memcpy local ") {
			// The one title only device_local_copy prints, for outputs
			// quoted without their "Running" line.
			m.Testcase = DeviceLocalCopy
		}
		out = append(out, *m)
		return nil
	}
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), "\r")
		t := strings.TrimSpace(line)
		f := strings.Fields(t)
		if cur != nil || skip {
			switch {
			case len(f) == 0:
				// A blank line ends a matrix.
				if err := finish(); err != nil {
					return out, err
				}
				skip = false
				continue
			case skip:
				continue
			case len(cur.Cols) == 0:
				cols, ok := ints(f)
				if !ok {
					return out, fmt.Errorf("line %d: nvbandwidth matrix %q: want the column numbers, got %q", lineNo, cur.Description, t)
				}
				cur.Cols = cols
				continue
			default:
				if row, ok := atoi(f[0]); ok {
					vals, err := cells(f[1:], len(cur.Cols))
					if err != nil {
						return out, fmt.Errorf("line %d: nvbandwidth matrix %q row %d: %w", lineNo, label(*cur), row, err)
					}
					cur.Rows = append(cur.Rows, row)
					cur.GBps = append(cur.GBps, vals)
					continue
				}
				// Anything else (SUM, NOTE) ends the matrix without a blank line.
				if err := finish(); err != nil {
					return out, err
				}
			}
		}
		switch {
		case strings.HasPrefix(t, "Running ") && strings.HasSuffix(t, "."):
			running = strings.TrimSuffix(strings.TrimPrefix(t, "Running "), ".")
		case strings.HasPrefix(t, "Waiving ") && strings.HasSuffix(t, "."):
			// v0.2-v0.4 name the waived testcase.
			waived = append(waived, strings.TrimSuffix(strings.TrimPrefix(t, "Waiving "), "."))
			running = ""
		case t == "Waived:":
			// v0.5 on print "Waived: " without the name.
			waived = append(waived, "a testcase")
			running = ""
		case isMatrixTitle(t):
			if strings.HasSuffix(t, "(ns)") {
				skip, latency = true, true
				running = ""
				continue
			}
			latency = false
			cur = &Matrix{Testcase: running, Description: t}
			running = ""
		case len(f) == 3 && f[0] == "SUM":
			v, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				return out, fmt.Errorf("line %d: bad SUM value %q", lineNo, f[2])
			}
			// The SUM line names its testcase; it belongs to the
			// last matrix unless that one is another testcase's.
			if n := len(out); n > 0 && !latency && (out[n-1].Testcase == "" || out[n-1].Testcase == f[1]) {
				out[n-1].Testcase = f[1]
				out[n-1].SumGBps = v
			}
		case failure == "" && isFailure(t):
			failure = t
			if running != "" {
				failure = running + ": " + t
			}
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("reading nvbandwidth output: %w", err)
	}
	if err := finish(); err != nil {
		return out, err
	}
	if failure != "" {
		return out, fmt.Errorf("nvbandwidth failed: %s", failure)
	}
	if len(out) == 0 {
		if len(waived) > 0 {
			return nil, fmt.Errorf("nvbandwidth waived %s (a waived testcase cannot run on this system, e.g. no peer access between the GPUs)", strings.Join(waived, ", "))
		}
		return nil, errors.New("no nvbandwidth bandwidth matrix in the output")
	}
	return out, nil
}

func label(m Matrix) string {
	if m.Testcase != "" {
		return m.Testcase
	}
	return m.Description
}

// isMatrixTitle reports whether t is the title line nvbandwidth prints
// above a matrix ("memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
// "memcpy local GPU(column) bandwidth (GB/s)", latency titles in ns).
func isMatrixTitle(t string) bool {
	return strings.Contains(t, "(column)") && (strings.HasSuffix(t, "(GB/s)") || strings.HasSuffix(t, "(ns)"))
}

// isFailure reports whether t is one of the lines nvbandwidth prints when a
// testcase fails: its ASSERT and CUDA error macros, "ERROR"/"Error" lines.
func isFailure(t string) bool {
	for _, p := range []string{"ASSERT", "ERROR", "Error:", "CUDA error", "CUDA_ERROR", "terminate called", "Segmentation fault", "Aborted"} {
		if strings.Contains(t, p) {
			return true
		}
	}
	return false
}

func atoi(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

func ints(f []string) ([]int, bool) {
	out := make([]int, 0, len(f))
	for _, s := range f {
		n, ok := atoi(s)
		if !ok {
			return nil, false
		}
		out = append(out, n)
	}
	return out, len(out) > 0
}

// cells parses n matrix cells: numbers or N/A.
func cells(f []string, n int) ([]float64, error) {
	if len(f) != n {
		return nil, fmt.Errorf("%d values for %d columns (output cut short or malformed)", len(f), n)
	}
	out := make([]float64, n)
	for i, s := range f {
		if s == "N/A" {
			out[i] = math.NaN()
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || v < 0 {
			return nil, fmt.Errorf("bad value %q", s)
		}
		out[i] = v
	}
	return out, nil
}

// nvbJSON is the document nvbandwidth -j prints (v0.5 on), as written by
// json_output.cpp: matrix cells are strings, "N/A" where not measured.
type nvbJSON struct {
	Nvbandwidth *struct {
		Version   string `json:"version"`
		Error     string `json:"error"`
		Testcases []struct {
			Name        string     `json:"name"`
			Status      string     `json:"status"`
			Error       string     `json:"error"`
			Description string     `json:"bandwidth_description"`
			Matrix      [][]string `json:"bandwidth_matrix"`
			Sum         *float64   `json:"sum"`
		} `json:"testcases"`
	} `json:"nvbandwidth"`
}

// ParseNvbandwidthJSON reads the output of nvbandwidth -j (v0.5 and later).
// Testcases that did not pass (Waived, Error, Not Found) are left out and
// reported in the error, with the matrices that passed; an "error" at the
// top (nvbandwidth could not start) is an error.
func ParseNvbandwidthJSON(r io.Reader) ([]Matrix, error) {
	var doc nvbJSON
	dec := json.NewDecoder(r)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("nvbandwidth JSON: %w", err)
	}
	if doc.Nvbandwidth == nil {
		return nil, errors.New(`nvbandwidth JSON: no "nvbandwidth" object`)
	}
	nv := doc.Nvbandwidth
	var out []Matrix
	var failed []string
	for _, tc := range nv.Testcases {
		if tc.Status != "Passed" {
			msg := tc.Name + " " + strings.ToLower(tc.Status)
			if tc.Error != "" {
				msg += ": " + tc.Error
			}
			failed = append(failed, msg)
			continue
		}
		if strings.HasSuffix(tc.Description, "(ns)") {
			continue // latency, not bandwidth
		}
		m := Matrix{Testcase: tc.Name, Description: tc.Description}
		for i, row := range tc.Matrix {
			if i > 0 && len(row) != len(tc.Matrix[0]) {
				return out, fmt.Errorf("nvbandwidth JSON: %s row %d has %d values, row 0 has %d", tc.Name, i, len(row), len(tc.Matrix[0]))
			}
			vals, err := cells(row, len(row))
			if err != nil {
				return out, fmt.Errorf("nvbandwidth JSON: %s row %d: %w", tc.Name, i, err)
			}
			m.Rows = append(m.Rows, i)
			m.GBps = append(m.GBps, vals)
		}
		if len(m.GBps) == 0 || len(m.GBps[0]) == 0 {
			return out, fmt.Errorf("nvbandwidth JSON: %s passed with an empty bandwidth_matrix", tc.Name)
		}
		for c := range m.GBps[0] {
			m.Cols = append(m.Cols, c)
		}
		m.SumGBps = m.sum()
		if tc.Sum != nil {
			m.SumGBps = *tc.Sum
		}
		out = append(out, m)
	}
	switch {
	case nv.Error != "":
		return out, fmt.Errorf("nvbandwidth failed: %s", nv.Error)
	case len(failed) > 0:
		return out, fmt.Errorf("nvbandwidth testcases did not pass: %s", strings.Join(failed, "; "))
	case len(out) == 0:
		return nil, errors.New("nvbandwidth JSON holds no bandwidth testcase")
	}
	return out, nil
}
