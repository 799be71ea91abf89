package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/verify/report"
)

// A healthy 2-node 16xH100 mpirun run (the real a3-megagpu-8g log of
// issue 11 item 1), launched by a command that starts with an environment
// assignment and names mpirun by its path (item 2): verify -tier fleet
// runs it once for the node group, not once per host, and judges it
// against the multi-node floor for H100 x 8 GPUs x 2 nodes over
// GPUDirect-TCPXO, not the single-node NVLink floor of 460 GB/s;
// -tier full does not launch it at all.
func TestVerifyMultiNodeNCCLOncePerGroup(t *testing.T) {
	t.Parallel()
	fixture, err := filepath.Abs("../../provision/verify/nccltest/testdata/all_reduce_perf-16xH100-2node-gcp-a3mega-tcpxo-mpirun.txt")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	count := filepath.Join(bin, "launches")
	// Stand-in mpirun: records each launch and prints the real output.
	writeFile(t, filepath.Join(bin, "mpirun"), "#!/bin/sh\necho launched >> '"+count+"'\ncat '"+fixture+"'\n")
	if err := os.Chmod(filepath.Join(bin, "mpirun"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "train" {
  hosts    = ["sim://hgx-h100-converged", "sim://hgx-h100-stale"]
  hardware = module.hgx.hardware
  verify {
    nccl_test "fleet16" {
      command = "NCCL_IB_DISABLE=0 `+filepath.Join(bin, "mpirun")+` -np 16 -npernode 8 all_reduce_perf -b 8 -e 8G -f 2 -g 1"
      network = "gcp_tcpxo"
    }
  }
}
`)
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	launches := func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "launched")
	}
	nccl := func(tier string) map[string]string {
		t.Helper()
		_, out, errOut := runCLIEnv(t, env, "verify", "-tier", tier, "-allow-local", "-format", "json", dir)
		var doc report.Document
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("-tier %s: %v\n%s%s", tier, err, out, errOut)
		}
		got := map[string]string{}
		for _, h := range doc.Hosts {
			for _, c := range h.Checks {
				if c.ID == "nccl.fleet16" {
					got[h.Host] = string(c.Status) + " | " + c.Expected + " | " + c.Observed + " | " + c.Message
				}
			}
		}
		if len(got) != 2 {
			t.Fatalf("-tier %s: nccl.fleet16 on %d hosts, want 2\n%s", tier, len(got), out)
		}
		return got
	}

	for host, c := range nccl("full") {
		// Left to the fleet tier: not run, not held against the host.
		if !strings.HasPrefix(c, "not run") || !strings.Contains(c, "-tier fleet") {
			t.Errorf("-tier full, %s: %s", host, c)
		}
	}
	if n := launches(); n != 0 {
		t.Errorf("-tier full launched the multi-node test %d time(s); it runs per host, so never", n)
	}

	for host, c := range nccl("fleet") {
		if !strings.HasPrefix(c, "pass") || !strings.Contains(c, "busbw 337.35 GB/s at 8G") || !strings.Contains(c, "a3-megagpu-8g") || strings.Contains(c, "460") {
			t.Errorf("-tier fleet, %s: %s", host, c)
		}
	}
	if n := launches(); n != 1 {
		t.Errorf("-tier fleet launched the multi-node test %d time(s), want once for the node group", n)
	}
}
