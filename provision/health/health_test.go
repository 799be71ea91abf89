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

var policy = Policy{KB: testKB, DrainAfter: 3, DrainWindow: time.Hour, MaxDrainedShare: 0.1}

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
	d := report.New(testKB, verify.TierProbe, []report.Host{h})
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

// Concurrent health runs on one node do not lose each other's sightings.
func TestUpdateLocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "health.json")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := Update(path, func(st *State) {
				st.Sightings = append(st.Sightings, Sighting{Key: string(rune('a' + i)), Kind: "Xid", Code: 13, At: time.Now()})
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var n int
	if err := Update(path, func(st *State) { n = len(st.Sightings) }); err != nil {
		t.Fatal(err)
	}
	if n != 20 {
		t.Errorf("%d sightings survived 20 concurrent updates", n)
	}
}

// One Xid seen by NVML in one run and read from the kernel log by the
// next is one event (its kernel timestamp and text): drain_after = 2 does
// not drain on it. A second event on the same GPU does.
func TestXidSeenByNVMLAndKernelCountsOnce(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p := Policy{KB: testKB, DrainAfter: 2, DrainWindow: time.Hour, MaxDrainedShare: 0.1}
	gpus := []nvmlfacts.GPU{{Index: 0, BusID: "00000000:1B:00.0"}, {Index: 1, BusID: "00000000:9D:00.0"}}
	withGPUs := func(d *report.Document) *report.Document {
		if d.Hosts[0].NVML == nil {
			d.Hosts[0].NVML = &nvmlfacts.Report{}
		}
		d.Hosts[0].NVML.GPUs = gpus
		return d
	}
	st := &State{}
	// Run 1, 12:00:00 to 12:00:03: NVML reports Xid 13 on GPU 0; the
	// kernel's line is not in what the run read of the log yet.
	d := Decide(withGPUs(docWith(nil, []uint64{13}, "", t0)), st, t0.Add(3*time.Second), p)
	if d.Drain || len(st.Sightings) != 1 {
		t.Fatalf("run 1: %+v, %d sightings", d, len(st.Sightings))
	}
	// Run 2: the kernel log has the line, stamped inside run 1.
	line := "2026-12-01T12:00:01,500000+00:00 NVRM: Xid (PCI:0000:1b:00): 13, pid=4242, Graphics Exception\n"
	d = Decide(withGPUs(docWith(nil, nil, line, t0.Add(5*time.Minute))), st, t0.Add(5*time.Minute), p)
	if d.Drain || len(st.Sightings) != 1 || !strings.HasPrefix(st.Sightings[0].Key, "kmsg ") {
		t.Fatalf("run 2 counted NVML's event again: %+v, %+v", d, st.Sightings)
	}
	// Run 3 reads the same line again: still one.
	d = Decide(withGPUs(docWith(nil, nil, line, t0.Add(10*time.Minute))), st, t0.Add(10*time.Minute), p)
	if d.Drain || len(st.Sightings) != 1 {
		t.Fatalf("run 3: %+v, %+v", d, st.Sightings)
	}
	// The same Xid on another GPU inside run 1's span is another event.
	other := line + "2026-12-01T12:00:02,000000+00:00 NVRM: Xid (PCI:0000:9d:00): 13, pid=4243, Graphics Exception\n"
	d = Decide(withGPUs(docWith(nil, nil, other, t0.Add(15*time.Minute))), st, t0.Add(15*time.Minute), p)
	if !d.Drain || len(st.Sightings) != 2 {
		t.Fatalf("a second event did not count: %+v, %+v", d, st.Sightings)
	}
	// Both in one run: NVML's event and the line it wrote are one.
	st2 := &State{}
	Decide(withGPUs(docWith(nil, []uint64{13}, line, t0)), st2, t0.Add(3*time.Second), p)
	if len(st2.Sightings) != 1 {
		t.Errorf("NVML and the log in one run: %+v", st2.Sightings)
	}
}

// A performance or link failure asks for a second run; it drains only
// when the second run fails it too. An Xid 79-class failure drains on
// sight, and with it nothing needs confirming.
func TestConfirmBeforeDrain(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	pcie := verify.CheckResult{ID: "nvml.pcie_link[gpu3]", Status: verify.StatusFail, Expected: "x16", Observed: "x8",
		Remedy: &verify.Remedy{Action: "inspect"}}
	pciePass := pcie
	pciePass.Status, pciePass.Observed = verify.StatusPass, "x16"
	xid79 := verify.CheckResult{ID: "nvml.xid", Status: verify.StatusFail, Message: "fatal XID seen: XID 79 on gpu4",
		Remedy: &verify.Remedy{Action: "reboot"}}

	d := Decide(docWith([]verify.CheckResult{pcie}, nil, "", t0), &State{}, t0, policy)
	if !d.Drain || len(d.Confirm) != 1 || d.Confirm[0].ID != pcie.ID {
		t.Fatalf("link failure: %+v", d)
	}
	once, runs := Confirm(d, docWith([]verify.CheckResult{pciePass}, nil, "", t0), 10*time.Second)
	if once.Drain || len(runs) != 2 || !strings.Contains(runs[0], "first run: fail (expected x16, observed x8)") || !strings.Contains(runs[1], "second run after 10s: pass") {
		t.Errorf("failed once: %+v %q", once, runs)
	}
	twice, runs := Confirm(d, docWith([]verify.CheckResult{pcie}, nil, "", t0), 10*time.Second)
	if !twice.Drain || !strings.HasSuffix(twice.Reason, "(failed twice, 10s apart)") || !strings.Contains(runs[1], "second run after 10s: fail") {
		t.Errorf("failed twice: %+v %q", twice, runs)
	}
	// A second run that did not judge the check leaves the failure standing.
	if d2, _ := Confirm(d, docWith(nil, nil, "", t0), time.Second); !d2.Drain {
		t.Errorf("unjudged second run: %+v", d2)
	}
	d = Decide(docWith([]verify.CheckResult{pcie, xid79}, nil, "", t0), &State{}, t0, policy)
	if !d.Drain || d.Confirm != nil || !strings.HasPrefix(d.Reason, "nvml.xid: reboot:") {
		t.Errorf("Xid 79 beside a link failure: %+v", d)
	}
}

// NVLink judged on a GPU without NVLink, and the fabric manager on a node
// whose GPUs have none, do not apply: never a drain. The same checks on
// NVLink hardware do.
func TestNotApplicable(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	nvlink := verify.CheckResult{ID: "nvml.nvlink[gpu0]", Status: verify.StatusFail, Expected: "all links active", Observed: "0/0 links active",
		Message: "no NVLink reported on 00000000:1B:00.0 (NVLink expected)", Remedy: &verify.Remedy{Action: "inspect"}}
	fm := verify.CheckResult{ID: "host.fabric_manager", Status: verify.StatusFail, Expected: "running", Observed: "not running"}
	doc := func(links int, checks ...verify.CheckResult) *report.Document {
		d := docWith(checks, nil, "", t0)
		g := nvmlfacts.GPU{Index: 0, BusID: "00000000:1B:00.0"}
		for i := range links {
			g.NVLinks = append(g.NVLinks, nvmlfacts.NVLink{Link: i})
		}
		d.Hosts[0].NVML = &nvmlfacts.Report{GPUs: []nvmlfacts.GPU{g}}
		return d
	}
	d := Decide(doc(0, nvlink, fm), &State{}, t0, policy)
	if d.Drain || len(d.NotApplicable) != 2 || !strings.Contains(d.NotApplicable[0], "nvml.nvlink[gpu0]: not applicable: NVML reports no NVLink on 00000000:1B:00.0") {
		t.Errorf("PCIe-only GPU: %+v", d)
	}
	d = Decide(doc(18, nvlink, fm), &State{}, t0, policy)
	if !d.Drain || len(d.NotApplicable) != 0 {
		t.Errorf("NVLink hardware: %+v", d)
	}
}
