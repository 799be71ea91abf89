package tool

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// seed adds every testdata file starting with prefix to f's corpus.
func seed(f *testing.F, prefix string) {
	names, _ := filepath.Glob(filepath.Join("testdata", prefix+"*"))
	for _, n := range names {
		if b, err := os.ReadFile(n); err == nil {
			f.Add(b)
		}
	}
}

// FuzzParseNvbandwidth: no input makes the parsers panic, and every matrix
// they return is rectangular with finite, non-negative cells or NaN.
func FuzzParseNvbandwidth(f *testing.F) {
	seed(f, "nvbandwidth")
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, parse := range []func([]byte) ([]Matrix, error){
			func(b []byte) ([]Matrix, error) { return ParseNvbandwidth(bytes.NewReader(b)) },
			func(b []byte) ([]Matrix, error) { return ParseNvbandwidthJSON(bytes.NewReader(b)) },
		} {
			ms, _ := parse(b)
			for _, m := range ms {
				if len(m.Rows) != len(m.GBps) || len(m.Cols) == 0 {
					t.Fatalf("ragged matrix %+v", m)
				}
				for _, row := range m.GBps {
					if len(row) != len(m.Cols) {
						t.Fatalf("row of %d for %d columns", len(row), len(m.Cols))
					}
					for _, v := range row {
						if v < 0 || math.IsInf(v, 0) {
							t.Fatalf("bad cell %v", v)
						}
					}
				}
			}
		}
	})
}

// FuzzParseIBWriteBW: no panic; a result without error has a row and
// finite, non-negative numbers.
func FuzzParseIBWriteBW(f *testing.F) {
	seed(f, "ib_write_bw")
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := ParseIBWriteBW(bytes.NewReader(b))
		if err != nil {
			return
		}
		if len(res.Rows) == 0 || res.MsgBytes <= 0 || res.AvgGbps < 0 || math.IsInf(res.AvgGbps, 0) || math.IsNaN(res.AvgGbps) {
			t.Fatalf("bad result without error: %+v", res)
		}
	})
}

// FuzzParseFioJSON: no panic; results have finite, non-negative numbers.
func FuzzParseFioJSON(f *testing.F) {
	seed(f, "fio")
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, _ := ParseFioJSON(bytes.NewReader(b))
		for _, r := range rs {
			for _, v := range []float64{r.ReadMBps, r.WriteMBps, r.ReadIOPS, r.WriteIOPS} {
				if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
					t.Fatalf("bad value in %+v", r)
				}
			}
		}
	})
}
