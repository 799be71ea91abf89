package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchRefusesSMAnswerToCERequest: bench asks nvbandwidth for the
// copy-engine host-to-device copy; a node whose nvbandwidth answers with
// the SM testcase (the published v0.8 run of NVIDIA/nvbandwidth#42) is
// not judged on that figure: the host_gpu layer says which testcase was
// asked and which answered, and nothing is called healthy on it.
func TestBenchRefusesSMAnswerToCERequest(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	if code, out, errOut := runCLIEnv(t, env, "bench", "-layers", "hbm", "testdata/bench-degraded"); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	sm, err := os.ReadFile("../../provision/bench/tool/testdata/nvbandwidth-v0.8-1xA100-h2d-sm-issue42.txt")
	if err != nil {
		t.Fatal(err)
	}
	replay := filepath.Join(state, "hgx-h100-degraded", "var", "lib", "gpuform-sim", "bench", "nvbandwidth", "host_to_device_memcpy_ce.txt")
	if _, err := os.Stat(replay); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(replay, sm, 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, errOut := runCLIEnv(t, env, "bench", "-format", "json", "-layers", "host_gpu", "testdata/bench-degraded")
	doc := decodeBench(t, out)
	said := false
	for _, h := range doc.Hosts {
		for _, l := range h.Layers {
			if l.Test == "host_to_device_memcpy_sm" || (strings.Contains(l.Test, "host_to_device") && l.Status == "ok" && l.Measured != nil && *l.Measured == 25.13) {
				t.Errorf("the SM figure was judged: %+v", l)
			}
			if strings.Contains(l.Note, "asked nvbandwidth for host_to_device_memcpy_ce but it answered host_to_device_memcpy_sm") {
				said = true
			}
		}
	}
	if !said {
		t.Errorf("no layer says which testcase answered:\n%s\n%s", out, errOut)
	}
}
