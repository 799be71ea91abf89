package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// simProcess writes one replayed process into a simulated root: its
// /proc/PID/status and environ as Linux writes them.
func simProcess(t *testing.T, root string, pid, cpus string, env ...string) {
	t.Helper()
	dir := filepath.Join(root, "proc", pid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	status := "Name:\tpython3\nState:\tS (sleeping)\nPid:\t" + pid + "\nCpus_allowed:\tffffffff\nCpus_allowed_list:\t" + cpus + "\nMems_allowed_list:\t0-1\n"
	writeFile(t, filepath.Join(dir, "status"), status)
	writeFile(t, filepath.Join(dir, "environ"), strings.Join(append([]string{"PATH=/usr/bin"}, env...), "\x00")+"\x00")
}

// TestVerifyProcesses: on the converged quickstart node, verify -processes
// judges the processes replayed on its GPUs: one started by gpuform bind
// (its socket's CPUs, its NIC) passes, one started without it fails with
// what is wrong, one that exited before it could be read is an error, and
// a GPU without processes is skipped. Without -processes nothing of it
// shows.
func TestVerifyProcesses(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", "../../examples/quickstart"); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	root := simRoot(t, state, "hgx-h100-stale")
	// GPU 0 sits on NUMA node 0 (CPUs 0-55,112-167) with mlx5_0; GPU 5 on
	// node 1 with mlx5_9 (modules/hgx-h100-8gpu).
	simProcess(t, root, "4242", "0-55,112-167", "LOCAL_RANK=0", "NCCL_IB_HCA==mlx5_0", "UCX_NET_DEVICES=mlx5_0:1")
	simProcess(t, root, "4343", "0-223", "LOCAL_RANK=5")
	if err := os.MkdirAll(filepath.Dir(filepath.Join(root, nvmlfacts.SimProcessesFile)), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, nvmlfacts.SimProcessesFile), `[
  {"gpu": 0, "pid": 4242, "used_memory_mib": 70000},
  {"gpu": 5, "pid": 4343, "used_memory_mib": 70000},
  {"gpu": 6, "pid": 4444}
]`)

	type check struct{ ID, Status, Observed, Expected, Message string }
	run := func(args ...string) map[string]check {
		t.Helper()
		_, out, errOut := runCLIEnv(t, env, append([]string{"verify", "-format", "json"}, append(args, "../../examples/quickstart")...)...)
		var doc struct{ Hosts []struct{ Checks []check } }
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Hosts) != 1 {
			t.Fatalf("verify: %v\n%s%s", err, out, errOut)
		}
		got := map[string]check{}
		for _, c := range doc.Hosts[0].Checks {
			got[c.ID] = c
		}
		return got
	}
	got := run("-processes")
	if c := got["bind.file"]; c.Status != "pass" {
		t.Errorf("bind.file after apply: %+v", c)
	}
	if c := got["bind.process[gpu0]"]; c.Status != "pass" || !strings.Contains(c.Observed, "pid 4242 (python3) CPUs 0-55,112-167 NCCL_IB_HCA==mlx5_0") || !strings.Contains(c.Observed, "modelled") {
		t.Errorf("bound process: %+v", c)
	}
	if c := got["bind.process[gpu5]"]; c.Status != "fail" ||
		!strings.Contains(c.Message, "pid 4343 (python3) may run on CPUs 0-223, 112 of them outside its GPU's NUMA node (CPUs 56-111,168-223)") ||
		!strings.Contains(c.Message, "has no NCCL_IB_HCA") || !strings.Contains(c.Message, "gpuform bind") {
		t.Errorf("unbound process: %+v", c)
	}
	if c := got["bind.process[gpu6]"]; c.Status != "error" || !strings.Contains(c.Message, "process 4444 exited") {
		t.Errorf("exited process: %+v", c)
	}
	if c := got["bind.process[gpu1]"]; c.Status != "skip" || c.Message != "no compute process on this GPU" {
		t.Errorf("idle GPU: %+v", c)
	}
	for id := range run() {
		if strings.HasPrefix(id, "bind.process") {
			t.Errorf("%s reported without -processes", id)
		}
	}
}
