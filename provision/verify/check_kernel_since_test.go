package verify

import (
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/verify/kmsg"
)

// An epilog judges the kernel log from its job's start on
// (HostOptions.KernelSince): an Xid 79 logged before the job is not
// judged, one logged during it fails the check, and a pass says since
// when it looked.
func TestKernelXIDSinceJobStart(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	lg := kmsg.Parse("2026-11-30T02:13:05,118204+00:00 NVRM: Xid (PCI:0000:9d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
	since := lg.From(start)
	got := checkKernelXID(Expectation{KB: testKB}, &since)
	if len(got) != 1 || got[0].Status != StatusPass || got[0].Observed != "none since 2026-12-02T05:00:00Z" {
		t.Errorf("Xid from before the job: %+v; want pass, observed none since the start", got)
	}
	during := kmsg.Parse("2026-12-02T05:00:03,000000+00:00 NVRM: Xid (PCI:0000:18:00): 79, pid=4711, name=python, GPU has fallen off the bus.\n").From(start)
	got = checkKernelXID(Expectation{KB: testKB}, &during)
	if len(got) != 1 || got[0].Status != StatusFail || got[0].Observed != "Xid 79 at 00000000:18:00.0" {
		t.Errorf("Xid during the job: %+v; want fail naming it", got)
	}
}
