package drill

import (
	"strings"
	"testing"
	"time"
)

// TestSelect: -fault picks drills in catalogue order; an unknown name is
// refused, listing the known.
func TestSelect(t *testing.T) {
	got, err := Select([]string{"shm-too-small", "gpu-off-bus"})
	if err != nil || len(got) != 2 || got[0].Name != "gpu-off-bus" || got[1].Name != "shm-too-small" {
		t.Errorf("Select: %v, %v", got, err)
	}
	if all, err := Select(nil); err != nil || len(all) != len(Catalogue()) {
		t.Errorf("Select(nil): %d, %v", len(all), err)
	}
	if _, err := Select([]string{"gpu-on-fire"}); err == nil || !strings.Contains(err.Error(), "known: gpu-off-bus") {
		t.Errorf("unknown drill: %v", err)
	}
	// The checkpoint-restore drill is known and selects no fault of the
	// catalogue: it runs the spec's workload.
	if got, err := Select([]string{CheckpointDrill}); err != nil || len(got) != 0 {
		t.Errorf("Select(checkpoint-restore): %v, %v", got, err)
	}
	seen := map[string]bool{}
	for _, f := range Catalogue() {
		if seen[f.Name] || (f.Plant == "" && f.Edit == nil) || len(f.Layers) == 0 {
			t.Errorf("%s: duplicate, or injects nothing, or on no layer", f.Name)
		}
		seen[f.Name] = true
	}
}

// TestReportNotCaught: one fault not caught fails the report and its
// table says so; an error counts as not caught.
func TestReportNotCaught(t *testing.T) {
	r := &Report{Base: BaseProfile, AlertsBy: "promtool test rules", Faults: []Result{
		{Name: "a", Summary: "A", Layers: []string{"NVML"}, Detected: true, Check: "nvml.x", Alert: "GPUFormCheckFailing", Action: "drain", TimeToDetect: 1500 * time.Millisecond},
		{Name: "b", Summary: "B", Layers: []string{"sysfs"}, Action: "none"},
	}}
	if r.OK() {
		t.Error("a report with a fault not caught is OK")
	}
	var b strings.Builder
	if err := r.WriteHuman(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"✓  a ", "nvml.x", "1.5s", "✗  b ", "NOT CAUGHT", "nothing caught it", "Drill failed: 1 of 2 faults not caught."} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	r.Faults[1] = Result{Name: "b", Detected: true, Check: "c", Error: "alerts: promtool failed"}
	if r.OK() {
		t.Error("a report with an error is OK")
	}
	r.Faults = r.Faults[:1]
	if !r.OK() {
		t.Error("every fault caught, not OK")
	}
	if (&Report{}).OK() {
		t.Error("a drill of no faults is OK")
	}
}

// TestReportCheckpoints: a checkpoint restore that did not resume fails
// the report, faults caught or none; its table row and words say why,
// and a node block left out is named as not run.
func TestReportCheckpoints(t *testing.T) {
	r := &Report{Base: BaseProfile, Checkpoints: []CheckpointResult{
		{Node: "good", Host: "gpu1", Detected: true, Passed: true, ResumedStep: 120, ThroughputBefore: 3200, ThroughputAfter: 3100, ThroughputLoss: 0.03125, MaxThroughputLoss: 0.1, KilledAfter: 30 * time.Second},
		{Node: "bad", Host: "gpu2", ThroughputBefore: 3200, Why: "the resumed run started over from step 0, not from the killed run's checkpoint", KilledAfter: 30 * time.Second},
	}, CheckpointsNotRun: []string{`node "real": real hosts (-on-real-hosts runs it there)`}}
	if r.OK() {
		t.Error("a report with a failed restore is OK")
	}
	var b strings.Builder
	if err := r.WriteHuman(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"resumed on 2 hosts", "✓  good  gpu1  30s", "step 120", "3.1%", "✗  bad   gpu2  30s", "NOT RESUMED",
		"gpu2: the resumed run started over from step 0", "Checkpoint restore not run on node \"real\"",
		"Checkpoint restore failed: 1 of 2 hosts did not resume as the spec says.",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	r.Checkpoints = r.Checkpoints[:1]
	if !r.OK() {
		t.Error("every restore passed, no fault run: not OK")
	}
}
