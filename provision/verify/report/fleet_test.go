package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/outlier"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/isolate"
)

// TestFleetSections: an incomplete isolation says so and names nobody; a
// pair that could not run says why; peer outliers are warnings with host,
// bus id, value and median, and leave the verdict alone. Both are in the
// JSON document.
func TestFleetSections(t *testing.T) {
	d := New(testKB, verify.TierFleet, []Host{{Host: "gpu01", Checks: []verify.CheckResult{{ID: "nvml.gpu_count", Status: verify.StatusPass}}}})
	d.Isolation = []Isolation{{
		Node: "train", Test: "fleet64", Mode: "on_failure", Trigger: "the 8-node run failed: busbw 77.78 GB/s at 8G is below the floor 120.00 GB/s",
		Hosts: []string{"gpu01", "gpu02", "gpu03", "gpu04"}, Budget: 45 * time.Minute, Duration: 3 * time.Second,
		Result: isolate.Result{
			Pairs: []isolate.Pair{
				{Round: 1, Hosts: [2]string{"gpu01", "gpu02"}, Outcome: isolate.Outcome{Ran: true, Pass: true, BusBW: 155.56, Floor: 120}},
				{Round: 1, Hosts: [2]string{"gpu03", "gpu04"}, Outcome: isolate.Outcome{Ran: true, BusBW: 77.78, Floor: 120, Message: "busbw below the floor"}},
				{Round: 2, Hosts: [2]string{"gpu03", "gpu01"}, Outcome: isolate.Outcome{Message: "the tier's budget was spent while the pair ran"}},
			},
			Culprits:   []isolate.Named{},
			Incomplete: "the tier's budget was spent while a round ran; undecided: gpu03, gpu04",
		},
	}}
	d.Outliers = []Outlier{{Margin: 0.1, Finding: outlier.Finding{
		Value: outlier.Value{Host: "gpu01", Device: "00000000:52:00.0", Model: "NVIDIA H100 80GB HBM3", Metric: "pcie_width", V: 8, HigherIsBetter: true},
		Scope: outlier.ScopeNode, Median: 16, Peers: 8, Worse: 0.5,
	}}}
	var b bytes.Buffer
	if err := WriteText(&b, d, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		`Pairwise isolation of node "train", nccl_test "fleet64" (the 8-node run failed`,
		"1      gpu03 + gpu04       77.78      120.00  FAIL",
		"2      gpu03 + gpu01           -           -  not run: the tier's budget was spent while the pair ran",
		"Isolation incomplete: the tier's budget was spent while a round ran; undecided: gpu03, gpu04",
		"3 pair(s) in 2 round(s), 3s of a 45m0s budget.",
		"Warning: devices worse than their peers (more than 10% from the median of the same model; they pass their floors)",
		"gpu01 00000000:52:00.0: pcie_width 8, 50% below the node median 16 of 8",
		"Verify passed (tier fleet)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Bad node") {
		t.Errorf("an incomplete isolation names a node:\n%s", text)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, d); err != nil {
		t.Fatal(err)
	}
	type pairJSON struct {
		Round int       `json:"round"`
		Hosts [2]string `json:"hosts"`
		Ran   bool      `json:"ran"`
	}
	type isolationJSON struct {
		Pairs      []pairJSON `json:"pairs"`
		Culprits   []any      `json:"culprits"`
		Complete   bool       `json:"complete"`
		Incomplete string     `json:"incomplete"`
	}
	type outlierJSON struct {
		Host   string  `json:"host"`
		Device string  `json:"device"`
		Median float64 `json:"median"`
		Scope  string  `json:"scope"`
	}
	var back struct {
		Isolation []isolationJSON `json:"isolation"`
		Outliers  []outlierJSON   `json:"outliers"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	// Culprits is [] (nobody named), not null: an incomplete isolation.
	wantIsolation := []isolationJSON{{
		Pairs:      []pairJSON{{1, [2]string{"gpu01", "gpu02"}, true}, {1, [2]string{"gpu03", "gpu04"}, true}, {2, [2]string{"gpu03", "gpu01"}, false}},
		Culprits:   []any{},
		Incomplete: "the tier's budget was spent while a round ran; undecided: gpu03, gpu04",
	}}
	if diff := cmp.Diff(wantIsolation, back.Isolation); diff != "" {
		t.Errorf("isolation JSON (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]outlierJSON{{"gpu01", "00000000:52:00.0", 16, "node"}}, back.Outliers); diff != "" {
		t.Errorf("outliers JSON (-want +got):\n%s", diff)
	}
}
