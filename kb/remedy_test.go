package kb

import (
	"strconv"
	"testing"
)

// The catalogue answers for every Xid NVIDIA's mapping lists, and the rows
// the health mode and the Xid 79 profile rely on say what NVIDIA says.
func TestRemedies(t *testing.T) {
	kb := mustKB(t)
	for n := uint64(1); n <= 172; n++ {
		if _, ok := kb.XidRemedy(n); !ok {
			t.Errorf("Xid %d has no remediation row", n)
		}
	}
	tests := []struct {
		name, kind, code string
		want             Action
		nvidia           string
	}{
		// A GPU that fell off the bus comes back only with a restart of the host.
		{"xid 79", "xid", "79", ActionReboot, "RESTART_BM"},
		// NVIDIA: restart the application; gpuform counts repeats.
		{"xid 13", "xid", "13", ActionMonitor, "RESTART_APP"},
		{"xid 119", "xid", "119", ActionResetGPU, "RESET_GPU"},
		{"xid 63 ignored", "xid", "63", ActionNone, "IGNORE"},
		// The catalogue: IGNORE for a channel retirement (a secondary mapping said
		// reboot), nothing for power smoothing re-engaged (it said reset).
		{"xid 160 ignored", "xid", "160", ActionNone, "IGNORE"},
		{"xid 162 informational", "xid", "162", ActionNone, "-"},
		{"xid 108 ignored", "xid", "108", ActionNone, "IGNORE"},
		{"xid 167 no action", "xid", "167", ActionUnknown, "-"},
		{"sxid fabric reset", "sxid", "12028", ActionReboot, "RESET_FABRIC (fatal)"},
		{"dcgm dbe", "dcgm", "4", ActionResetGPU, "Drain the GPU and reset it or reboot the node."},
		{"check gpu count", "check", "nvml.gpu_count", ActionReboot, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := kb.Remedy(tc.kind, tc.code)
			if !ok {
				t.Fatalf("no row for %s %s", tc.kind, tc.code)
			}
			if r.Action != tc.want {
				t.Errorf("action %q, want %q", r.Action, tc.want)
			}
			if tc.nvidia != "" && r.NVIDIAAction != tc.nvidia {
				t.Errorf("NVIDIA's action %q, want %q", r.NVIDIAAction, tc.nvidia)
			}
			if len(r.Sources) == 0 || r.File != "data/remediation.tsv" || r.Line < 2 {
				t.Errorf("row without source or position: %+v", r.Fact)
			}
		})
	}
	// Every row carries a source, and only rows whose action comes straight
	// from NVIDIA's words are confirmed.
	for _, r := range kb.Remedies() {
		if len(r.Sources) == 0 {
			t.Errorf("%s %s: no source", r.Kind, r.Code)
		}
		if r.Action == ActionUnknown && r.Status.CanBeError() {
			t.Errorf("%s %s: no action but status %s", r.Kind, r.Code, r.Status)
		}
		if r.Kind != "check" {
			if _, err := strconv.Atoi(r.Code); err != nil {
				t.Errorf("%s %q: not a number", r.Kind, r.Code)
			}
		}
	}
}
