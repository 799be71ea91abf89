package spec

import (
	"strings"
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

// unknown_xid is "warn" (the default) or "drain"; anything else is a clear
// error with a suggestion.
func TestHealthUnknownXid(t *testing.T) {
	load := func(v string) (*Config, string) {
		cfg, diags := LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(`
node "a" {
  hosts = ["gpu1"]
  health {
    unknown_xid = "` + v + `"
  }
}
`)}, LoadOptions{})
		if diags.HasErrors() {
			return nil, diags.Error()
		}
		return cfg, ""
	}
	if cfg, err := load("drain"); err != "" || !cfg.Nodes[0].Health.DrainsUnknownXid() {
		t.Errorf("drain: %v %q", cfg, err)
	}
	if cfg, err := load("warn"); err != "" || cfg.Nodes[0].Health.DrainsUnknownXid() {
		t.Errorf("warn: %q", err)
	}
	if _, err := load("drian"); err == "" || !strings.Contains(err, `Did you mean "drain"?`) {
		t.Errorf("typo: %q", err)
	}
	var none *Health
	if none.DrainsUnknownXid() {
		t.Error("no block drains unknown Xids")
	}
}
