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

// A health block whose breaker rounds down to no drain for the node's
// hosts is warned about; enough hosts, a share that allows one, or a
// fleet_partition are not.
func TestHealthBreakerAllowsNoneWarns(t *testing.T) {
	for _, tc := range []struct {
		hosts, body string
		warn        bool
	}{
		{`"gpu[1-5]"`, "drain_after = 3", true},
		{`"gpu[1-5]"`, "max_drained_share = 0.1", true},
		{`"gpu[1-5]"`, "max_drained_share = 0.2", false},
		{`"gpu[01-10]"`, "drain_after = 3", false},
		{`"gpu1"`, "fleet_partition = \"gpu\"", false},
	} {
		_, diags := LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte("node \"a\" {\n  hosts = [" + tc.hosts + "]\n  health {\n    " + tc.body + "\n  }\n}\n")}, LoadOptions{})
		got := false
		for _, d := range diags {
			if d.Summary == "Circuit breaker allows no drain" {
				got = true
			}
		}
		if diags.HasErrors() || got != tc.warn {
			t.Errorf("%s %s: warning %v, want %v (%s)", tc.hosts, tc.body, got, tc.warn, diags.Error())
		}
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
