package health

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/kmsg"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/report"
)

var policy = Policy{DrainAfter: 3, DrainWindow: time.Hour, MaxDrainedShare: 0.1}

func docWith(checks []verify.CheckResult, nvmlXids []uint64, kernel string, at time.Time) *report.Document {
	h := report.Host{Host: "local://n", Checks: checks}
	if nvmlXids != nil {
		w := &nvmlfacts.XIDWatch{}
		for _, x := range nvmlXids {
			w.Events = append(w.Events, nvmlfacts.XIDEvent{XID: x})
		}
		h.NVML = &nvmlfacts.Report{XID: w}
	}
	if kernel != "" {
		lg := kmsg.Parse(kernel)
		h.Kernel = &lg
	}
	d := report.New(verify.TierProbe, []report.Host{h})
	d.CheckedAt = at
	return d
}

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	reboot := verify.CheckResult{ID: "kernel.xid", Status: verify.StatusFail, Message: "Xid 79 at PCI:0000:9d:00",
		Remedy: &verify.Remedy{Action: "reboot"}}
	monitorFail := verify.CheckResult{ID: "nvml.xid", Status: verify.StatusFail, Message: "fatal XID seen: XID 69",
		Remedy: &verify.Remedy{Action: "monitor"}}
	noRemedy := verify.CheckResult{ID: "nvml.facts", Status: verify.StatusFail, Message: "no NVML"}
	skipped := verify.CheckResult{ID: "nvml.ecc_uncorrectable[gpu0]", Status: verify.StatusSkip, Message: "no ECC counters (ECC off or not supported)"}
	deeper := verify.CheckResult{ID: "nccl.single", Status: verify.StatusNotRun, Message: "not run at -tier probe: single-node nccl-tests run from -tier full"}
	unread := verify.CheckResult{ID: "nvml.temperature[gpu0]", Status: verify.StatusError, Message: "could not tell: NVML's GetTemperature failed (ERROR_UNKNOWN)"}
	missed := verify.CheckResult{ID: "nccl.fleet", Status: verify.StatusNotRun, Needed: true, Message: "not run: the run named other hosts"}
	tests := []struct {
		name   string
		doc    *report.Document
		drain  bool
		reason string
	}{
		{"pass", docWith(nil, nil, "", t0), false, ""},
		// The catalogue says reboot: drain on sight, and the reason says so.
		{"reboot class", docWith([]verify.CheckResult{reboot}, nil, "", t0), true, "kernel.xid: reboot: Xid 79 at PCI:0000:9d:00"},
		// A failed check the catalogue knows nothing milder about drains, as before.
		{"no remedy", docWith([]verify.CheckResult{noRemedy}, nil, "", t0), true, "nvml.facts: unknown: no NVML"},
		// An Xid of the fatal list whose class is monitor is counted, not drained on sight.
		{"monitor-class fatal-list xid", docWith([]verify.CheckResult{monitorFail}, []uint64{69}, "", t0), false, ""},
		// The gate's verdicts: a check that does not apply, or one left
		// to a deeper tier, keeps the node in; a check gpuform could not
		// make, or one the tier needed that did not run, takes it out.
		{"skip and not run", docWith([]verify.CheckResult{skipped, deeper}, nil, "", t0), false, ""},
		{"could not tell", docWith([]verify.CheckResult{unread}, nil, "", t0), true, "nvml.temperature[gpu0]: unknown: could not tell: NVML's GetTemperature failed (ERROR_UNKNOWN)"},
		{"needed, not run", docWith([]verify.CheckResult{missed}, nil, "", t0), true, "nccl.fleet: unknown: not run: the run named other hosts"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.doc, &State{}, t0, policy)
			if d.Drain != tc.drain || d.Reason != tc.reason {
				t.Errorf("Decide = %v %q, want %v %q", d.Drain, d.Reason, tc.drain, tc.reason)
			}
		})
	}
}

func TestDecideCountsRepeatsInTheWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	st := &State{}
	// The same kernel-log line read by three runs is one sighting.
	line := "2026-11-30T11:30:00,000000+00:00 NVRM: Xid (PCI:0000:1b:00): 13, Graphics Exception\n"
	for i := range 3 {
		d := Decide(docWith(nil, nil, line, t0.Add(time.Duration(i)*time.Minute)), st, t0.Add(time.Duration(i)*time.Minute), policy)
		if d.Drain {
			t.Fatalf("run %d drained on one logged Xid 13", i)
		}
	}
	// Two more runs each see one in NVML's window: three sightings.
	Decide(docWith(nil, []uint64{13}, "", t0.Add(5*time.Minute)), st, t0.Add(5*time.Minute), policy)
	d := Decide(docWith(nil, []uint64{13}, "", t0.Add(6*time.Minute)), st, t0.Add(6*time.Minute), policy)
	if !d.Drain || !strings.HasPrefix(d.Reason, "Xid 13: graphics engine exception seen 3 times in 1h0m0s") {
		t.Fatalf("third sighting: %+v", d)
	}
	// A kernel line logged during this run's NVML window is the same
	// event NVML reported: not counted twice.
	st2 := &State{}
	during := "2026-11-30T12:00:01,000000+00:00 NVRM: Xid (PCI:0000:1b:00): 13, Graphics Exception\n"
	Decide(docWith(nil, []uint64{13}, during, t0), st2, t0.Add(2*time.Second), policy)
	if len(st2.Sightings) != 1 {
		t.Errorf("an Xid in NVML's window and the log counted %d times", len(st2.Sightings))
	}
	// Past the window the sightings are forgotten.
	d = Decide(docWith(nil, nil, "", t0.Add(2*time.Hour)), st, t0.Add(2*time.Hour), policy)
	if d.Drain || len(st.Sightings) != 0 {
		t.Errorf("after the window: %+v, %d sightings", d, len(st.Sightings))
	}
}

func TestBreaker(t *testing.T) {
	tests := []struct {
		name           string
		drained, total int
		open           bool
	}{
		{"none drained", 0, 5, false},
		// Exactly the share is not more than it.
		{"at the share", 1, 10, false},
		{"above the share", 2, 10, true},
		{"small fleet", 1, 5, true},
		{"no fleet", 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			open, msg := Breaker(tc.drained, tc.total, policy)
			if open != tc.open || (open && msg == "") {
				t.Errorf("Breaker(%d, %d) = %v %q", tc.drained, tc.total, open, msg)
			}
		})
	}
}

// Concurrent health runs on one node do not lose each other's sightings.
func TestUpdateLocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "health.json")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := Update(path, func(st *State) error {
				st.Sightings = append(st.Sightings, Sighting{Key: string(rune('a' + i)), Kind: "Xid", Code: 13, At: time.Now()})
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var n int
	if err := Update(path, func(st *State) error { n = len(st.Sightings); return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 20 {
		t.Errorf("%d sightings survived 20 concurrent updates", n)
	}
}
