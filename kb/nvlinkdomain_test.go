package kb

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestNVLinkDomainPlatformFor answers the rack-scale platform of a tray's
// GPU model from any of its spellings, and nothing for an 8-GPU board.
func TestNVLinkDomainPlatformFor(t *testing.T) {
	t.Parallel()
	k := mustKB(t)
	type answer struct {
		Platform                       string
		GPUsPerTray, Trays, DomainGPUs int
		IMEXRequired                   bool
		NVLSBusBWGBps                  float64
		NVLSMessage, NVLSKind          string
	}
	tests := []struct {
		name string
		want *answer
	}{
		{"GB200", &answer{"GB200 NVL72", 4, 18, 72, true, 834.57, "8G", "typical"}},
		{"NVIDIA GB200", &answer{"GB200 NVL72", 4, 18, 72, true, 834.57, "8G", "typical"}},
		{"GB300", &answer{"GB300 NVL72", 4, 18, 72, true, 895.08, "16G", "baseline"}},
		{"H100", nil},
		{"no such GPU", nil},
	}
	for _, tt := range tests {
		p, ok := k.NVLinkDomainPlatformFor(tt.name)
		if tt.want == nil {
			if ok {
				t.Errorf("%s: got platform %q, want none", tt.name, p.Platform)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: no platform", tt.name)
			continue
		}
		got := answer{p.Platform, p.GPUsPerTray, p.Trays, p.DomainGPUs, p.IMEXRequired, p.NVLSBusBWGBps, p.NVLSMessage, p.NVLSKind}
		if d := cmp.Diff(*tt.want, got, cmpopts.EquateApprox(0, 0.001)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
		if len(p.Sources) == 0 {
			t.Errorf("%s: row has no source", tt.name)
		}
	}
}
