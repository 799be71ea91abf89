package health

import (
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/kmsg"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// An Xid gpuform cannot judge (here one past its catalogue) is never a
// pass, but health mode drains on it only when the spec asks (health {
// unknown_xid = "drain" } → Expectation.UnknownXidFail). An unreadable
// kernel log drains: nothing was judged (docs/security.md).
func TestDecideUnknownXidAndUnreadableLog(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	judge := func(exp verify.Expectation, lg kmsg.Log) verify.CheckResult {
		for _, c := range verify.Check(exp, &nvmlfacts.Report{}, verify.HostFacts{Kernel: &lg}) {
			if c.ID == string(verify.CheckKernelXID) {
				return c
			}
		}
		t.Fatal("no kernel.xid check")
		return verify.CheckResult{}
	}
	unknown := kmsg.Parse("[ 1.0] NVRM: Xid (PCI:0000:1b:00): 173, something new\n")
	tests := []struct {
		name   string
		exp    verify.Expectation
		log    kmsg.Log
		status verify.Status
		drain  bool
	}{
		{"unknown xid, default", verify.Expectation{KB: testKB}, unknown, verify.StatusError, false},
		{"unknown xid, unknown_xid = drain", verify.Expectation{KB: testKB, UnknownXidFail: true}, unknown, verify.StatusFail, true},
		{"unreadable log", verify.Expectation{KB: testKB}, kmsg.Log{Unreadable: "dmesg: Operation not permitted"}, verify.StatusError, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := judge(tc.exp, tc.log)
			if c.Status != tc.status {
				t.Fatalf("kernel.xid %s, want %s: %+v", c.Status, tc.status, c)
			}
			d := Decide(docWith([]verify.CheckResult{c}, nil, "", t0), &State{}, t0, policy)
			if d.Drain != tc.drain {
				t.Errorf("drain %v (%q), want %v", d.Drain, d.Reason, tc.drain)
			}
		})
	}
}
