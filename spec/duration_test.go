package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Every duration attribute is parsed once, when the spec is decoded: the
// decoded value holds the text as written (plans carry it) and the
// duration, so no consumer parses it again.
func TestDurationsParsedAtDecode(t *testing.T) {
	cfg, diags := LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(`
inventory "lab" {
  hosts         = ["gpu1"]
  probe_timeout = "90s"
}
node "a" {
  hosts = inventory.lab
  rollout {
    step_timeout  = "45m"
    drain         = "slurm"
    drain_timeout = "2h"
    drain_poll    = "30s"
  }
  health {
    drain_window  = "6h"
    valid_for     = "90m"
    confirm_delay = "15s"
  }
  verify {
    nccl_test "ar" {
      command = "all_reduce_perf -b 8 -e 1G"
      timeout = "10m"
    }
  }
}
`)}, LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	n := cfg.Nodes[0]
	got := map[string]Duration{
		"probe_timeout": cfg.Inventories["lab"].ProbeTimeout.V,
		"step_timeout":  n.Rollout.StepTimeout.V, "drain_timeout": n.Rollout.DrainTimeout.V, "drain_poll": n.Rollout.DrainPoll.V,
		"drain_window": n.Health.DrainWindow.V, "valid_for": n.Health.ValidFor.V, "confirm_delay": n.Health.ConfirmDelay.V,
		"nccl timeout": n.Verify.NCCLTests[0].Timeout.V,
	}
	want := map[string]Duration{
		"probe_timeout": {"90s", 90 * time.Second},
		"step_timeout":  {"45m", 45 * time.Minute}, "drain_timeout": {"2h", 2 * time.Hour}, "drain_poll": {"30s", 30 * time.Second},
		"drain_window": {"6h", 6 * time.Hour}, "valid_for": {"90m", 90 * time.Minute}, "confirm_delay": {"15s", 15 * time.Second},
		"nccl timeout": {"10m", 10 * time.Minute},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded durations (-want +got):\n%s", diff)
	}
	if h := n.Hosts[0]; h.ProbeTimeout != 90*time.Second {
		t.Errorf("host %s probe timeout %s, want the inventory's 90s", h.Name, h.ProbeTimeout)
	}
	if d := n.Health.ConfirmDelayOrDefault(); d != 15*time.Second {
		t.Errorf("confirm delay %s, want 15s", d)
	}
}

// An object that reads as an inventory but was written by hand (no port)
// has its probe_timeout checked where it is written, not dropped.
func TestProbeTimeoutOfHandWrittenInventory(t *testing.T) {
	cfg, diags := LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(`node "a" {
  hosts = { name = "x", hosts = ["gpu1"], probe_timeout = "30s" }
}
`)}, LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if h := cfg.Nodes[0].Hosts[0]; h.ProbeTimeout != 30*time.Second {
		t.Errorf("probe timeout %s, want 30s", h.ProbeTimeout)
	}
	_, diags = LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(`node "a" {
  hosts = { name = "x", hosts = ["gpu1"], probe_timeout = "soon" }
}
`)}, LoadOptions{})
	if !diags.HasErrors() {
		t.Fatal("a probe_timeout of \"soon\" was accepted")
	}
	d := diags[0]
	if d.Summary != "Invalid probe_timeout" || !strings.Contains(d.Detail, `"soon" is not a duration between 1s and 24h like "2m".`) || d.Subject == nil || d.Subject.Start.Line != 2 {
		t.Errorf("diagnostic %s: %s at %v, want Invalid probe_timeout at line 2", d.Summary, d.Detail, d.Subject)
	}
}

func TestParseTimeout(t *testing.T) {
	for text, want := range map[string]time.Duration{"1s": time.Second, "24h": 24 * time.Hour, "1m30s": 90 * time.Second} {
		if d, err := ParseTimeout(text); err != nil || d != (Duration{text, want}) {
			t.Errorf("ParseTimeout(%q) = %v, %v; want %s", text, d, err, want)
		}
	}
	for _, text := range []string{"", "0s", "999ms", "25h", "soon", "-1m"} {
		if d, err := ParseTimeout(text); err == nil || err.Error() != `"`+text+`" is not a duration between 1s and 24h` {
			t.Errorf("ParseTimeout(%q) = %v, %v; want refused", text, d, err)
		}
	}
}
