package graph

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSetNVLinks: with the GPU model's NVLink count the matrix writes
// each NVSwitch pair as nvidia-smi topo -m does ("NV18" on HGX H100, as
// in the captures under provision/verify/smi/testdata/topo); without one, or on
// a board without an NVSwitch fabric, nothing changes.
func TestSetNVLinks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		profile string
		links   int
		want    string // GPU0's cell towards GPU1
	}{
		{"hgx-h100-converged", 18, "NV18"},
		{"hgx-h100-converged", 0, "NV"},
		{"l40s-rocky9", 18, "NODE"},
	} {
		topo := FromFacts(factsRoot(t, tc.profile), nil)
		topo.SetNVLinks(tc.links)
		if got := topo.Matrix.Cells[0][1]; got != tc.want {
			t.Errorf("%s, %d links: GPU0–GPU1 is %q, want %q", tc.profile, tc.links, got, tc.want)
		}
		if got := topo.Matrix.Cells[1][1]; got != "X" {
			t.Errorf("%s: the diagonal is %q, want X", tc.profile, got)
		}
		if tc.links > 0 && topo.Fabric != nil {
			if diff := cmp.Diff(tc.links, topo.Fabric.Links); diff != "" {
				t.Errorf("Fabric.Links (-want +got):\n%s", diff)
			}
		}
	}
}
