package verify

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/lint/compat"
	"github.com/gpuform/gpuform/provision/verify/dcgm"
	"github.com/gpuform/gpuform/provision/verify/kmsg"
)

// Every check verify emits has a row in the remediation catalogue, so a
// failed check always says what it means and what to do.
func TestEveryCheckHasARemedy(t *testing.T) {
	kb := compat.Default()
	for _, d := range Checks() {
		if _, ok := kb.Remedy("check", string(d.ID)); !ok {
			t.Errorf("check %s has no row in lint/compat/data/remediation.tsv", d.ID)
		}
	}
}

func TestKernelXID(t *testing.T) {
	tests := []struct {
		name     string
		log      string
		status   Status
		action   compat.Action
		inReport string
	}{
		{name: "empty", log: "", status: StatusPass},
		// The catalogue: Xid 79 needs the node restarted.
		{name: "xid 79", log: "[ 1.0] NVRM: Xid (PCI:0000:9d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n",
			status: StatusFail, action: compat.ActionReboot, inReport: "GPU has fallen off the bus"},
		// NVIDIA says restart the application: reported, not failed.
		{name: "xid 13 monitor", log: "[ 1.0] NVRM: Xid (PCI:0000:1b:00): 13, Graphics Exception\n[ 2.0] NVRM: Xid (PCI:0000:1b:00): 13, Graphics Exception\n",
			status: StatusPass, inReport: "2 times"},
		// NVSwitch SXids are judged by their own catalogue rows.
		{name: "sxid fabric reset", log: "[ 1.0] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)\n",
			status: StatusFail, action: compat.ActionReboot, inReport: "SXid 12028 at PCI:0000:07:00.0"},
		{name: "sxid ignored", log: "[ 1.0] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20001, Non-fatal, TX replay\n", status: StatusPass},
		// The worst of several speaks for the check.
		{name: "worst wins", log: "[ 1.0] NVRM: Xid (PCI:0000:1b:00): 119, GSP\n[ 2.0] NVRM: Xid (PCI:0000:9d:00): 79, off the bus\n",
			status: StatusFail, action: compat.ActionReboot},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lg := kmsg.Parse(tc.log)
			got := checkKernelXID(Expectation{}, &lg)
			if len(got) != 1 {
				t.Fatalf("got %d results", len(got))
			}
			r := got[0]
			if r.Status != tc.status {
				t.Errorf("status %s, want %s (%+v)", r.Status, tc.status, r)
			}
			if tc.action != "" && (r.Remedy == nil || r.Remedy.Action != tc.action) {
				t.Errorf("remedy %+v, want action %s", r.Remedy, tc.action)
			}
			if tc.status == StatusPass && r.Remedy != nil {
				t.Errorf("a pass carries a remedy: %+v", r.Remedy)
			}
			if tc.inReport != "" && !strings.Contains(r.Observed+r.Message, tc.inReport) {
				t.Errorf("observed %q message %q do not say %q", r.Observed, r.Message, tc.inReport)
			}
		})
	}
	unread := checkKernelXID(Expectation{}, &kmsg.Log{Unreadable: "dmesg: read kernel buffer failed: Operation not permitted"})
	if unread[0].Status != StatusSkip {
		t.Errorf("unreadable log: %+v", unread[0])
	}
}

// A failed DCGM test names DCGM's own error code: the catalogue's row for
// it speaks, the worst of several.
func TestDCGMRemedyFromErrorID(t *testing.T) {
	res := &dcgm.Result{Level: 1, Diag: &dcgm.Diag{Tests: []dcgm.Test{
		{Category: "Hardware", Name: "memory", Status: "Fail", Warnings: []string{"row remap pending", "pages"}, ErrorIDs: []int{6, 85}},
		{Category: "Hardware", Name: "pcie", Status: "Fail"},
	}}}
	out := checkDCGM(res, false, false)
	attachRemedies(compat.Default(), out, nil, HostFacts{})
	if len(out) != 2 {
		t.Fatalf("got %d results", len(out))
	}
	if r := out[0].Remedy; r == nil || r.Action != compat.ActionResetGPU || !strings.Contains(r.Cause, "DCGM_FR_PENDING_ROW_REMAP") {
		t.Errorf("memory: remedy %+v, want DCGM_FR_PENDING_ROW_REMAP's reset_gpu over DCGM_FR_PENDING_PAGE_RETIREMENTS's monitor", r)
	}
	// Without an error code the check's own row answers.
	if r := out[1].Remedy; r == nil || r.Cause != "dcgm" {
		t.Errorf("pcie: remedy %+v, want the dcgm check's row", r)
	}
}
