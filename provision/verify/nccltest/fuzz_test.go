package nccltest

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes Parse or Judge panic, that every
// parsed row keeps the invariants Judge relies on, and that what Parse
// returns can always be written into the JSON report.
func FuzzParse(f *testing.F) {
	f.Add("# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
		"           8             2     float     sum      -1    10.00    0.00    0.00      0    10.00    0.00    0.00      0\n" +
		"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0\n")
	f.Add(" 0: # Out of bounds values : 0 OK\n")
	f.Add("host: Test NCCL failure common.cu:392 'unhandled cuda error / '\n")
	f.Fuzz(func(t *testing.T, s string) {
		runs, err := Parse(strings.NewReader(s))
		if err != nil {
			return // lines over the scanner's limit
		}
		if _, err := json.Marshal(runs); err != nil {
			t.Fatalf("parsed runs cannot be written as JSON: %v", err)
		}
		for _, r := range runs {
			for _, row := range r.Rows {
				if row.Size < 0 || row.Count < 0 {
					t.Fatalf("negative size/count: %+v", row)
				}
			}
			v := Judge(r, 1)
			if v.Pass && (len(r.Rows) == 0 || r.OutOfBounds == nil) {
				t.Fatalf("passed without rows or footer: %+v", r)
			}
		}
	})
}
