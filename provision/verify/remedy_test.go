package verify

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/verify/dcgm"
	"github.com/gpuform/gpuform/provision/verify/kmsg"
)

// Every check verify emits has a row in the remediation catalogue, so a
// failed check always says what it means and what to do.
func TestEveryCheckHasARemedy(t *testing.T) {
	kbase := testKB
	for _, d := range Checks() {
		if _, ok := kbase.Remedy("check", string(d.ID)); !ok {
			t.Errorf("check %s has no row in kb/data/remediation.tsv", d.ID)
		}
	}
}

func TestKernelXID(t *testing.T) {
	tests := []struct {
		name     string
		log      string
		status   Status
		action   kb.Action
		inReport string
	}{
		{name: "empty", log: "", status: StatusPass},
		// The catalogue: Xid 79 needs the node restarted.
		{name: "xid 79", log: "[ 1.0] NVRM: Xid (PCI:0000:9d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n",
			status: StatusFail, action: kb.ActionReboot, inReport: "GPU has fallen off the bus"},
		// NVIDIA says restart the application: reported, not failed.
		{name: "xid 13 monitor", log: "[ 1.0] NVRM: Xid (PCI:0000:1b:00): 13, Graphics Exception\n[ 2.0] NVRM: Xid (PCI:0000:1b:00): 13, Graphics Exception\n",
			status: StatusPass, inReport: "2 times"},
		// NVSwitch SXids are judged by their own catalogue rows.
		{name: "sxid fabric reset", log: "[ 1.0] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)\n",
			status: StatusFail, action: kb.ActionReboot, inReport: "SXid 12028 at 00000000:07:00.0"},
		{name: "sxid ignored", log: "[ 1.0] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20001, Non-fatal, TX replay\n", status: StatusPass},
		// The worst of several speaks for the check.
		{name: "worst wins", log: "[ 1.0] NVRM: Xid (PCI:0000:1b:00): 119, GSP\n[ 2.0] NVRM: Xid (PCI:0000:9d:00): 79, off the bus\n",
			status: StatusFail, action: kb.ActionReboot},
		// NVIDIA's catalogue: Xid 160 is IGNORE and 162 has no action; a
		// B200 node with them is healthy (the table used to drain it).
		{name: "xid 160 ignored", log: "[ 1.0] NVRM: Xid (PCI:0000:1b:00): 160, Channel Retirement Event\n", status: StatusPass},
		{name: "xid 162 informational", log: "[ 1.0] NVRM: Xid (PCI:0000:1b:00): 162, Power Smoothing HW Circuitry capability reengaged\n", status: StatusPass},
		// An Xid the catalogue names but gives no action for is not a pass.
		{name: "xid 167 no action", log: "[ 1.0] NVRM: Xid (PCI:0000:1b:00): 167, PCIE_FATAL_TIMEOUT\n",
			status: StatusError, action: kb.ActionMonitor, inReport: "PCIe fatal timeout: NVIDIA's catalogue gives no action"},
		// An Xid unknown to gpuform is never a pass.
		{name: "xid unknown", log: "[ 1.0] NVRM: Xid (PCI:0000:1b:00): 173, something new\n",
			status: StatusError, action: kb.ActionMonitor, inReport: "Xid 173 at 00000000:1B:00.0 — unknown to this release of gpuform"},
		{name: "sxid unknown", log: "[ 1.0] nvidia-nvswitch0: SXid (PCI:0000:07:00.0): 99999, Non-fatal, new\n",
			status: StatusError, inReport: "SXid 99999"},
		// Xids 144-150 are judged by subcode and error status: RLW_REMAP
		// 0x00000001 is XID_154_EVAL (restart the app) in the decode sheet,
		// 0x00000040 is RESET_GPU.
		{name: "xid 145 non-fatal subcode", log: "[ 1.0] NVRM: Xid (PCI:0000:5f:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 02 (0x00000004 0x00000001 0x00000000 0x00000000)\n",
			status: StatusPass, inReport: "Xid 145 RLW_REMAP"},
		{name: "xid 145 fatal subcode", log: "[ 1.0] NVRM: Xid (PCI:0000:5f:00): 145, RLW_REMAP Fatal XC1 i0 Link 10 (0x00000082 0x00000040 0x00000000 0x00000000)\n",
			status: StatusFail, action: kb.ActionResetGPU},
		{name: "xid 149 ber event ignored", log: "[ 1.0] NVRM: Xid (PCI:0018:01:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 03 (0x00086226 0x00000001 0x00000000 0x00000000)\n",
			status: StatusPass},
		// A subcode line the sheet has no row for falls back to the Xid's
		// row (WORKFLOW_NVLINK5_ERR: reset).
		{name: "xid 145 undecoded", log: "[ 1.0] NVRM: Xid (PCI:0000:5f:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 02\n",
			status: StatusFail, action: kb.ActionResetGPU},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lg := kmsg.Parse(tc.log)
			got := checkKernelXID(Expectation{KB: testKB}, &lg)
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
	// Nothing judged is nothing passed: an unreadable log, or one past the
	// transport's 64 MiB (kmsg.Read's error), is an error that says why,
	// with a remedy health mode drains on (docs/security.md: the host fails).
	for _, why := range []string{"dmesg: read kernel buffer failed: Operation not permitted",
		"the command wrote more than 64 MiB to its stdout and was stopped (a node whose output is this large is broken or hostile)"} {
		unread := checkKernelXID(Expectation{KB: testKB}, &kmsg.Log{Unreadable: why})
		if r := unread[0]; r.Status != StatusError || !strings.Contains(r.Message, why) || r.Remedy == nil || r.Remedy.Action != kb.ActionConfig {
			t.Errorf("unreadable log: %+v", r)
		}
	}
	// The spec may ask an unknown Xid to fail (health { unknown_xid = "drain" }).
	lg := kmsg.Parse("[ 1.0] NVRM: Xid (PCI:0000:1b:00): 173, something new\n")
	if r := checkKernelXID(Expectation{KB: testKB, UnknownXidFail: true}, &lg)[0]; r.Status != StatusFail || r.Remedy == nil || r.Remedy.Action != kb.ActionUnknown {
		t.Errorf("unknown Xid with unknown_xid = drain: %+v", r)
	}
}

// A failed DCGM test names DCGM's own error code: the catalogue's row for
// it speaks, the worst of several.
func TestDCGMRemedyFromErrorID(t *testing.T) {
	res := &dcgm.Result{Level: 1, Diag: &dcgm.Diag{Tests: []dcgm.Test{
		{Category: "Hardware", Name: "memory", Status: "Fail", Warnings: []string{"row remap pending", "pages"}, ErrorIDs: []int{6, 85}},
		{Category: "Hardware", Name: "pcie", Status: "Fail"},
	}}}
	out := checkDCGM(testKB, res, false, false)
	attachRemedies(testKB, out, nil, HostFacts{})
	if len(out) != 2 {
		t.Fatalf("got %d results", len(out))
	}
	if r := out[0].Remedy; r == nil || r.Action != kb.ActionResetGPU || !strings.Contains(r.Cause, "DCGM_FR_PENDING_ROW_REMAP") {
		t.Errorf("memory: remedy %+v, want DCGM_FR_PENDING_ROW_REMAP's reset_gpu over DCGM_FR_PENDING_PAGE_RETIREMENTS's monitor", r)
	}
	// Without an error code the check's own row answers.
	if r := out[1].Remedy; r == nil || r.Cause != "dcgm" {
		t.Errorf("pcie: remedy %+v, want the dcgm check's row", r)
	}
}
