package health

import (
	"testing"

	"github.com/gpuform/gpuform/provision/slurm"
)

// A gate's drain is health mode's (the breaker counts it, apply leaves
// it alone) but not one a passing HealthCheckProgram run lifts.
func TestGateDrainOwnership(t *testing.T) {
	t.Parallel()
	prolog := GateReason(GatePrologue, "42", "kernel.xid: reboot: Xid 79 at PCI:0000:9d:00")
	epilog := GateReason(GateEpilogue, "43", "kernel.xid: reboot: Xid 79 at PCI:0000:9d:00")
	if prolog != "gpuform: health: prolog job 42: kernel.xid: reboot: Xid 79 at PCI:0000:9d:00" {
		t.Errorf("prolog reason %q", prolog)
	}
	for _, tc := range []struct {
		reason              string
		owns, lifts, gate   bool
		appOwns, appForeign bool
	}{
		{prolog, true, false, true, false, true},
		{epilog, true, false, true, false, true},
		{Reason("kernel.xid: reboot: Xid 79"), true, true, false, false, true},
		// A check whose id starts with "prolog" is no gate's.
		{Reason("prolog.thing: config: x"), true, true, false, false, true},
		{"gpuform: apply failed: step 3", false, false, false, true, false},
		{"Prolog error", false, false, false, false, true},
		{"RMA 4711", false, false, false, false, true},
	} {
		n := slurm.Node{Name: "gpu001", State: "IDLE+DRAIN", Reason: tc.reason}
		if Owns(n) != tc.owns || Lifts(n) != tc.lifts || IsGateDrain(tc.reason) != tc.gate || n.Own() != tc.appOwns || n.Foreign() != tc.appForeign {
			t.Errorf("%q: Owns %v Lifts %v IsGateDrain %v apply Own %v Foreign %v; want %v %v %v %v %v",
				tc.reason, Owns(n), Lifts(n), IsGateDrain(tc.reason), n.Own(), n.Foreign(), tc.owns, tc.lifts, tc.gate, tc.appOwns, tc.appForeign)
		}
	}
}
