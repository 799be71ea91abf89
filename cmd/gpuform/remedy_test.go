package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// xid79Spec is a node of eight H100s on the given simulated host.
func xid79Spec(t *testing.T, host string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `
node "gpu" {
  hosts = ["`+host+`"]
  verify {
    nvml { gpus = 8 }
  }
}
`)
	return dir
}

// The node whose GPU fell off the bus fails kernel.xid and nvml.gpu_count
// with the catalogue's meaning and action, in the text report and in the
// JSON document; the same node before the fault passes both.
func TestVerifyXid79RemedyThroughCLI(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := xid79Spec(t, "sim://hgx-h100-xid79")

	code, out, errOut := runCLIEnv(t, env, "verify", dir)
	if code != ExitReport {
		t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"FAIL   kernel.xid",
		"Xid 79 at 00000000:9D:00.0",
		"what it means: GPU has fallen off the bus and is not responding to commands [Xid 79 (ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS)]",
		"what to do:    drain and reboot the node [reboot] (NVIDIA: RESTART_BM; catalogue status confirmed)",
		"FAIL   nvml.gpu_count",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}

	code, out, errOut = runCLIEnv(t, env, "verify", "-json", dir)
	if code != ExitReport {
		t.Fatalf("-json: exit %d\n%s", code, errOut)
	}
	var doc struct {
		FormatVersion string    `json:"format_version"`
		CheckedAt     time.Time `json:"checked_at"`
		Expires       time.Time `json:"expires_at"`
		Hosts         []struct {
			Checks []struct {
				ID, Status, Observed string
				Remedy               *struct {
					Cause, Meaning, Action, Do, Status, Source string
					NVIDIAAction                               string `json:"nvidia_action"`
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	// The result carries when it was taken and when it stops standing
	// (health { valid_for }, default an hour).
	if doc.CheckedAt.IsZero() || time.Since(doc.CheckedAt) > time.Minute || doc.Expires.Sub(doc.CheckedAt) != time.Hour {
		t.Errorf("checked_at %s, expires_at %s: want now and an hour later", doc.CheckedAt, doc.Expires)
	}
	got := map[string]string{}
	for _, c := range doc.Hosts[0].Checks {
		if c.Status == "fail" {
			if c.Remedy == nil {
				t.Errorf("%s failed without a remedy", c.ID)
				continue
			}
			got[c.ID] = c.Remedy.Action + " | " + c.Remedy.Cause + " | " + c.Remedy.NVIDIAAction
		}
		if c.ID == "kernel.xid" && (c.Remedy == nil || !strings.Contains(c.Remedy.Meaning, "fallen off the bus") || !strings.HasPrefix(c.Remedy.Source, "https://")) {
			t.Errorf("kernel.xid remedy: %+v", c.Remedy)
		}
	}
	want := map[string]string{
		"kernel.xid":     "reboot | Xid 79 (ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS) | RESTART_BM",
		"nvml.gpu_count": "reboot | nvml.gpu_count | RESTART_BM (Xid 79); Xid 143 GPU_INIT_ERROR: RESET_GPU",
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: remedy %q, want %q", id, got[id], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("failed checks %v, want exactly %v", got, want)
	}

	// The healthy twin: no Xid in its kernel log, eight GPUs.
	code, out, _ = runCLIEnv(t, env, "verify", "-verbose", xid79Spec(t, "sim://hgx-h100-converged"))
	if code != ExitOK || !strings.Contains(out, "kernel.xid") || !strings.Contains(out, "none since boot") {
		t.Errorf("converged node: exit %d\n%s", code, out)
	}
}
