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
