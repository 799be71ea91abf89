package facts_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/provision/facts"
)

// TestRenderJSONStreamsTheSameDocument: RenderJSON writes host by host
// what encoding the whole Document writes, byte for byte, for no host, one
// failed host, and probed hosts with HTML-significant and non-ASCII text.
func TestRenderJSONStreamsTheSameDocument(t *testing.T) {
	t.Parallel()
	var probed facts.Node
	b, err := os.ReadFile(filepath.Join("testdata", "golden", "hgx-h100-converged.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &probed); err != nil {
		t.Fatal(err)
	}
	odd := probed
	odd.Warnings = []string{"<script> & \\u2028 ünïcode \"quoted\""}
	for name, hosts := range map[string][]facts.HostFacts{
		"none":   {},
		"nil":    nil,
		"failed": {{Host: "gpu001", Node: "train", Error: "connect: refused <&>"}},
		"fleet":  {{Host: "gpu001", Node: "train", Facts: &probed}, {Host: "gpu002", Error: "auth"}, {Host: "gpu003", Node: "train", Facts: &odd}},
	} {
		t.Run(name, func(t *testing.T) {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetIndent("", "  ")
			if err := enc.Encode(facts.Document{FormatVersion: jsonformat.Version, Hosts: hosts}); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := facts.RenderJSON(&got, hosts); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.String(), got.String()); diff != "" {
				t.Errorf("RenderJSON differs from encoding the whole document (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJSONReportInAnyOrder: hosts handed over in any order, as a fleet's
// probes finish (failed hosts last), make the document RenderJSON writes
// in spec order, byte for byte, whether the entries that wait are held in
// the temporary file or, when none can be made, in memory.
func TestJSONReportInAnyOrder(t *testing.T) {
	probed := goldenNode(t, "hgx-h100-converged")
	odd := *probed
	odd.Warnings = []string{"<script> & \\u2028 ünïcode \"quoted\""}
	var hosts []facts.HostFacts
	for i := range 12 {
		h := facts.HostFacts{Host: fmt.Sprintf("gpu%03d", i), Node: "train", Facts: probed}
		switch i % 4 {
		case 1:
			h = facts.HostFacts{Host: h.Host, Node: "train", Error: "connect: refused <&>"}
		case 2:
			h.Facts = &odd
		}
		hosts = append(hosts, h)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(facts.Document{FormatVersion: jsonformat.Version, Hosts: hosts}); err != nil {
		t.Fatal(err)
	}
	var failedLast []int
	for _, failed := range []bool{false, true} {
		for i, h := range hosts {
			if (h.Error != "") == failed {
				failedLast = append(failedLast, i)
			}
		}
	}
	orders := map[string][]int{
		"in order":    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
		"reversed":    {11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
		"shuffled":    {3, 0, 7, 1, 11, 2, 9, 4, 6, 10, 5, 8},
		"failed last": failedLast,
	}
	for _, spill := range []string{"file", "memory"} {
		t.Run(spill, func(t *testing.T) {
			if spill == "memory" {
				t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "absent"))
			}
			for name, order := range orders {
				var got bytes.Buffer
				r := facts.NewJSONReport(&got, len(hosts))
				for _, i := range order {
					r.Add(i, hosts[i])
				}
				if err := r.Close(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if diff := cmp.Diff(want.String(), got.String()); diff != "" {
					t.Errorf("%s: the report differs from encoding the whole document (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

// TestJSONReportRefusesMissingHosts: a report that was not handed every
// host, or one host twice, fails instead of writing a document without
// them.
func TestJSONReportRefusesMissingHosts(t *testing.T) {
	t.Parallel()
	h := facts.HostFacts{Host: "gpu001", Error: "auth"}
	for name, add := range map[string][]int{"missing": {1}, "twice": {1, 1, 0}, "out of range": {0, 1, 2}} {
		r := facts.NewJSONReport(io.Discard, 2)
		for _, i := range add {
			r.Add(i, h)
		}
		if err := r.Close(); err == nil {
			t.Errorf("%s: Close returned no error", name)
		}
	}
}

// TestReportsHoldNoFacts: the reports hold what they print of a host, not
// its facts. Hosts handed over in reverse order (the first host last: a
// slow or failed first host) leave every JSON entry waiting, in the
// temporary file, not in memory; the text report holds a host's table row
// and listing once among like hosts. Each budget is a small fraction of a
// host's JSON entry (30 kB here).
func TestReportsHoldNoFacts(t *testing.T) {
	probed := goldenNode(t, "hgx-h100-converged")
	entry, err := json.Marshal(facts.HostFacts{Host: "gpu000", Facts: probed})
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	host := func(i int) facts.HostFacts {
		// Each host's facts are its own copy, as each probe's are.
		var f facts.Node
		if err := json.Unmarshal(entry, &struct{ Facts *facts.Node }{&f}); err != nil {
			t.Fatal(err)
		}
		return facts.HostFacts{Host: fmt.Sprintf("gpu%03d", i), Node: "train", Facts: &f}
	}
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	var out bytes.Buffer
	jr, tr := facts.NewJSONReport(&out, n), facts.NewTextReport(n)
	// The first half pays for what a report holds once (its buffers).
	for i := n - 1; i >= n/2; i-- {
		jr.Add(i, host(i))
	}
	for i := range n / 2 {
		tr.Add(i, host(i))
	}
	h0 := heap()
	for i := n/2 - 1; i > 0; i-- {
		jr.Add(i, host(i))
	}
	jsonHeld := (heap() - h0) / (n/2 - 1)
	h0 = heap()
	for i := n / 2; i < n; i++ {
		tr.Add(i, host(i))
	}
	textHeld := (heap() - h0) / (n / 2)
	t.Logf("a host's JSON entry is %d bytes; the JSON report holds %d bytes a waiting host, the text report %d bytes a host", len(entry), jsonHeld, textHeld)
	if jsonHeld > 1024 {
		t.Errorf("the JSON report holds %d bytes for each host waiting for the first, want at most 1024 (an entry is %d)", jsonHeld, len(entry))
	}
	if textHeld > 512 {
		t.Errorf("the text report holds %d bytes a host, want at most 512", textHeld)
	}
	jr.Add(0, host(0))
	if err := jr.Close(); err != nil {
		t.Fatal(err)
	}
	var doc facts.Document
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Hosts) != n || doc.Hosts[n-1].Facts == nil || doc.Hosts[0].Host != "gpu000" {
		t.Fatalf("the document: %v, %d hosts", err, len(doc.Hosts))
	}
}
