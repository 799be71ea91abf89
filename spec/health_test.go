package spec

import (
	"testing"
	"time"
)

func TestHealthPolicy(t *testing.T) {
	cfg, diags := LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(`
node "a" {
  hosts = ["gpu1"]
  health {
    drain_after       = 5
    drain_window      = "6h"
    max_drained_share = 0.25
  }
}
node "b" {
  hosts = ["gpu2"]
}
`)}, LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	after, window, share, valid := cfg.Nodes[0].Health.Policy()
	if after != 5 || window != 6*time.Hour || share != 0.25 || valid != DefaultValidFor {
		t.Errorf("a: %d %s %g %s", after, window, share, valid)
	}
	// No block: the defaults.
	after, window, share, valid = cfg.Nodes[1].Health.Policy()
	if after != DefaultDrainAfter || window != DefaultDrainWindow || share != DefaultMaxDrainedShare || valid != DefaultValidFor {
		t.Errorf("b: %d %s %g %s", after, window, share, valid)
	}
}
