package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/internal/promtool"
	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/drill"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/spec"
)

type drillJSON struct {
	FormatVersion  string   `json:"format_version"`
	OK             bool     `json:"ok"`
	Baseline       []string `json:"baseline_failures"`
	AlertsBy       string   `json:"alerts_by"`
	BaselineAlerts []string `json:"baseline_alerts"`
	Faults         []struct {
		Name         string   `json:"name"`
		Detected     bool     `json:"detected"`
		Check        string   `json:"check"`
		Checks       []string `json:"checks"`
		Action       string   `json:"action"`
		Alert        string   `json:"alert"`
		Alerts       []string `json:"alerts"`
		DrainReason  string   `json:"drain_reason"`
		TimeToDetect int64    `json:"time_to_detect_ns"`
		Group        []string `json:"group"`
		GroupFails   []string `json:"group_failures"`
	} `json:"faults"`
	Checkpoints []struct {
		Node              string  `json:"node"`
		Host              string  `json:"host"`
		Simulated         bool    `json:"simulated"`
		GPUs              int     `json:"gpus"`
		KilledAfter       int64   `json:"killed_after_ns"`
		CheckpointWritten bool    `json:"checkpoint_written"`
		Detected          bool    `json:"detected"`
		ResumedStep       int64   `json:"resumed_step"`
		ThroughputBefore  float64 `json:"throughput_before"`
		ThroughputAfter   float64 `json:"throughput_after"`
		MaxThroughputLoss float64 `json:"max_throughput_loss"`
		Passed            bool    `json:"passed"`
		Why               string  `json:"why"`
		Error             string  `json:"error"`
	} `json:"checkpoints"`
}

func runDrillJSON(t *testing.T, args ...string) (int, drillJSON) {
	t.Helper()
	code, out, errOut := runCLIEnv(t, nil, append([]string{"drill", "-format", "json"}, args...)...)
	var doc drillJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("drill -format json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if doc.FormatVersion != jsonformat.Version {
		t.Errorf("format_version %q, want %q", doc.FormatVersion, jsonformat.Version)
	}
	return code, doc
}

// TestDrillCatchesEveryFault (issue 38): the whole catalogue, run once
// over simulated nodes in parallel, is caught, each fault by the check
// this table names (written from what each check judges, not from the
// drill's output), with health mode draining the node.
func TestDrillCatchesEveryFault(t *testing.T) {
	t.Parallel()
	promtool.Path(t) // the alerts are evaluated by promtool test rules
	// The alert: the rule of gpuform alerts written for the condition,
	// else GPUFormCheckFailing, which every failed check raises.
	const failing = "GPUFormCheckFailing"
	want := map[string]struct{ check, action, alert string }{
		"gpu-off-bus":             {"nvml.gpu_count", "drain", failing},
		"nvlink-down":             {"nvml.nvlink[gpu4]", "drain after a confirming run", "GPUFormNVLinkDown"},
		"rail-nic-down":           {"nic.link[mlx5_5]", "drain after a confirming run", failing},
		"rail-nic-trained-low":    {"nic.link[mlx5_3]", "drain after a confirming run", failing},
		"pcie-downgraded":         {"nvml.pcie_link[gpu5]", "drain after a confirming run", failing},
		"ecc-remap-pending":       {"nvml.row_remap[gpu5]", "drain", "GPUFormGPURowRemapPending"},
		"thermal-throttle":        {"nvml.throttle[gpu5]", "drain after a confirming run", failing},
		"fabric-manager-stopped":  {"host.fabric_manager", "drain", failing},
		"driver-library-mismatch": {"nvml.driver_version", "drain", "GPUFormDriverNotPinned"},
		"shm-too-small":           {"spec.shm", "drain", failing},
		// The group's 3-node run is below its floor on every node, so it
		// tells no node; pairwise isolation names the slow one.
		"slow-node": {"nccl_isolation.group", "drain", failing},
	}
	for _, f := range drill.Catalogue() {
		if _, ok := want[f.Name]; !ok {
			t.Errorf("catalogue fault %q has no expected check in this test", f.Name)
		}
	}
	code, doc := runDrillJSON(t, "../../examples/drill")
	if code != ExitOK || !doc.OK {
		t.Errorf("exit %d, ok %v: want 0, true", code, doc.OK)
	}
	if doc.AlertsBy != "promtool test rules" || len(doc.BaselineAlerts) != 0 {
		t.Errorf("alerts by %q, on the healthy node %v", doc.AlertsBy, doc.BaselineAlerts)
	}
	if len(doc.Baseline) != 0 {
		t.Errorf("the healthy node fails %v: the example must match sim://hgx-h100-converged", doc.Baseline)
	}
	if len(doc.Faults) != len(want) {
		t.Fatalf("%d faults reported, want %d", len(doc.Faults), len(want))
	}
	for _, f := range doc.Faults {
		w := want[f.Name]
		if !f.Detected || f.Check != w.check || f.Action != w.action {
			t.Errorf("%s: detected %v by %q, action %q; want %q, %q", f.Name, f.Detected, f.Check, f.Action, w.check, w.action)
		}
		if f.Alert != w.alert || !slices.Contains(f.Alerts, failing) {
			t.Errorf("%s: alert %q of %v, want %q and %s", f.Name, f.Alert, f.Alerts, w.alert, failing)
		}
		if f.TimeToDetect <= 0 {
			t.Errorf("%s: time to detect %d", f.Name, f.TimeToDetect)
		}
		if !strings.HasPrefix(f.DrainReason, "gpuform: health: "+w.check+": ") {
			t.Errorf("%s: drain reason %q", f.Name, f.DrainReason)
		}
	}
	// The slow node passes every single-node check (the group block
	// names no rails), its group's run fails on the healthy peers too,
	// and it is the group's last of three.
	for _, f := range doc.Faults {
		if f.Name != "slow-node" {
			continue
		}
		if !slices.Equal(f.Checks, []string{"nccl_isolation.group"}) || !slices.Equal(f.GroupFails, []string{"nccl.group"}) {
			t.Errorf("slow-node: counted %v, failing on a healthy peer too %v; want [nccl_isolation.group], [nccl.group]", f.Checks, f.GroupFails)
		}
		if len(f.Group) != 3 || f.Group[2] != "sim://hgx-h100-converged/drill-slow-node-3" {
			t.Errorf("slow-node: group %v", f.Group)
		}
	}
	// The lost GPU shows on the kernel log's layer too.
	for _, f := range doc.Faults {
		if f.Name == "gpu-off-bus" && !slices.Contains(f.Checks, "kernel.xid") {
			t.Errorf("gpu-off-bus: kernel.xid did not fail: %v", f.Checks)
		}
	}
}

// TestDrillFailsWithACheckRemoved: with nvml.pcie_link not counted,
// nothing else catches a GPU trained at x8; with nccl_isolation not
// counted, nothing else tells the slow node of its group (the group's
// run fails on its healthy peers too); the drill fails. The same drills
// with the checks counted pass (TestDrillCatchesEveryFault).
func TestDrillFailsWithACheckRemoved(t *testing.T) {
	t.Parallel()
	code, doc := runDrillJSON(t, "-fault", "pcie-downgraded", "-disable-check", "nvml.pcie_link",
		"-fault", "slow-node", "-disable-check", "nccl_isolation", "../../examples/drill")
	if code != ExitReport || doc.OK {
		t.Errorf("exit %d, ok %v: want %d, false", code, doc.OK, ExitReport)
	}
	if len(doc.Faults) != 2 {
		t.Fatalf("faults %+v: want pcie-downgraded and slow-node", doc.Faults)
	}
	for _, f := range doc.Faults {
		if f.Detected || f.Check != "" {
			t.Errorf("%s: detected by %q %v, want not detected", f.Name, f.Check, f.Checks)
		}
	}
}

// TestDrillRefusals: real hosts are refused (no drill is marked safe),
// as are an unknown drill and an unknown check, before any node is made.
func TestDrillRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		// The one drill safe on a real node needs a node block of real
		// hosts whose workload says how it resumes; the example has none.
		{[]string{"-on-real-hosts"}, "checkpoint-restore: no node block of real hosts has a workload that says how it resumes"},
		{[]string{"-on-real-hosts", "-fault", "gpu-off-bus"}, "-on-real-hosts: gpu-off-bus is not safe on a real node: of 12 drills only checkpoint-restore is"},
		{[]string{"-fault", "checkpoint-restore"}, "checkpoint-restore: no node block of simulated hosts has a workload that says how it resumes"},
		{[]string{"-fault", "gpu-on-fire"}, `unknown drill "gpu-on-fire" (known: gpu-off-bus, nvlink-down`},
		{[]string{"-fault", "gpu-on-fire"}, `slow-node, checkpoint-restore)`},
		{[]string{"-disable-check", "nvml.pcie"}, `-disable-check "nvml.pcie": not a verify check id`},
	} {
		code, out, errOut := runCLIEnv(t, nil, append(append([]string{"drill"}, tc.args...), "../../examples/drill")...)
		if code != ExitFailed || !strings.Contains(errOut, tc.want) {
			t.Errorf("drill %v: exit %d, want %d and %q\n%s%s", tc.args, code, ExitFailed, tc.want, out, errOut)
		}
	}
}

// TestDrillCheckpointRestore (issue 38): the checkpoint-restore drill
// kills the example's simulated workload after kill_after and resumes it
// from the checkpoint it wrote, at the same throughput (8 GPUs × 400
// samples/s, the stand-in's model); exit 0.
func TestDrillCheckpointRestore(t *testing.T) {
	t.Parallel()
	code, doc := runDrillJSON(t, "-fault", "checkpoint-restore", "../../examples/checkpoint-drill")
	if code != ExitOK || !doc.OK || len(doc.Faults) != 0 || len(doc.Checkpoints) != 1 {
		t.Fatalf("exit %d, ok %v, %d faults, checkpoints %+v: want 0, true, 0, one", code, doc.OK, len(doc.Faults), doc.Checkpoints)
	}
	c := doc.Checkpoints[0]
	if !c.Passed || !c.Detected || !c.CheckpointWritten || c.Why != "" || c.Error != "" {
		t.Errorf("%+v: want passed, detected, checkpoint written", c)
	}
	// Killed after 2 s with a checkpoint every 5 steps of 0.1 s: the
	// resume starts from a checkpoint of the killed run, below step 30.
	if c.ResumedStep < 5 || c.ResumedStep >= 30 || c.ResumedStep%5 != 0 {
		t.Errorf("resumed from step %d, want a multiple of 5 from 5 to 25", c.ResumedStep)
	}
	if c.Node != "train" || c.Host != "sim://hgx-h100-converged/drill-checkpoint-train" || !c.Simulated || c.GPUs != 8 {
		t.Errorf("node %q host %q simulated %v gpus %d", c.Node, c.Host, c.Simulated, c.GPUs)
	}
	if c.ThroughputBefore != 3200 || c.ThroughputAfter != 3200 || c.MaxThroughputLoss != 0.1 || c.KilledAfter < 2e9 {
		t.Errorf("throughput %g -> %g (max loss %g), killed after %dns", c.ThroughputBefore, c.ThroughputAfter, c.MaxThroughputLoss, c.KilledAfter)
	}
}

// TestDrillCheckpointBrokenResume: of two node blocks, the one whose
// resume command starts over fails the drill (exit 2), the one that
// resumes passes; each is reported per node, and the table says so.
func TestDrillCheckpointBrokenResume(t *testing.T) {
	t.Parallel()
	code, doc := runDrillJSON(t, "-fault", "checkpoint-restore", "testdata/drill-checkpoint-broken")
	if code != ExitReport || doc.OK || len(doc.Checkpoints) != 2 {
		t.Fatalf("exit %d, ok %v, checkpoints %+v: want %d, false, two", code, doc.OK, doc.Checkpoints, ExitReport)
	}
	good, bad := doc.Checkpoints[0], doc.Checkpoints[1]
	if good.Node != "resumes" || !good.Passed || good.ResumedStep < 3 || good.GPUs != 4 || good.ThroughputAfter != 1600 {
		t.Errorf("resumes: %+v; want passed from a checkpoint at 4 GPUs (bench's largest), 1600 samples/s", good)
	}
	if bad.Node != "starts-over" || bad.Passed || bad.Detected || !strings.HasPrefix(bad.Why, `the resumed run printed no line matching resumed "resumed from step ([0-9]+)"`) {
		t.Errorf("starts-over: %+v; want not resumed, not passed", bad)
	}
	if bad.GPUs != 8 {
		t.Errorf("starts-over: %d GPUs, want the hardware's 8", bad.GPUs)
	}
}

// TestDrillCheckpointRefusesLocalWorkload: a simulated node runs its
// commands on this machine, so a bench workload other than the simulated
// one is refused without -allow-local, before anything runs.
func TestDrillCheckpointRefusesLocalWorkload(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLIEnv(t, nil, "drill", "-fault", "checkpoint-restore", "testdata/drill-checkpoint-local")
	want := `host sim://hgx-h100-converged is this machine: the checkpoint drill would run the spec's command "torchrun --nproc_per_node={gpus} train.py" on the machine gpuform runs on`
	if code != ExitFailed || !strings.Contains(errOut, want) || !strings.Contains(errOut, "pass -allow-local") {
		t.Errorf("exit %d, want %d and %q\n%s%s", code, ExitFailed, want, out, errOut)
	}
}

// TestDrillCheckpointOnRealHosts: -on-real-hosts runs the checkpoint
// drill over SSH (a real sshd) on the spec's real host, killing the
// workload there with the node's timeout(1) and resuming it; the host's
// workload is the training stand-in against a simulated root the sshd's
// sessions point at, so the test can read what ran.
func TestDrillCheckpointOnRealHosts(t *testing.T) {
	t.Parallel()
	root, err := sim.MaterializeHost(sim.Scheme+"hgx-h100-converged/ssh", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := sshtest.Start(t, sshtest.Options{Env: map[string]string{
		"GPUFORM_ROOT": root,
		"PATH":         filepath.Join(root, filepath.FromSlash(sim.BinDir)) + ":/usr/bin:/bin",
	}})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `inventory "lab" {
  hosts = ["127.0.0.1"]
  user  = "`+srv.User+`"
  port  = `+strconv.Itoa(srv.Port)+`
}
node "train" {
  hosts = inventory.lab
  bench {
    command    = "gpuform-sim-train --gpus={gpus} --ckpt-dir=/scratch/ckpt --steps=20 --save-every=3 --step-time=0.1"
    throughput = "samples/s: ([0-9.]+)"
    checkpoint {
      resume_command = "gpuform-sim-train --gpus={gpus} --ckpt-dir=/scratch/ckpt --steps=20 --save-every=3 --step-time=0.1 --resume"
      resumed        = "resumed from step ([0-9]+)"
      dir            = "/scratch/ckpt"
      kill_after     = "1s"
      gpus           = 2
    }
  }
}
`)
	code, doc := runDrillJSON(t, "-on-real-hosts", "-ssh-config", "none", "-identity", srv.UserKeyFile, "-known-hosts", srv.KnownHostsFile, dir)
	if code != ExitOK || !doc.OK || len(doc.Faults) != 0 || len(doc.Checkpoints) != 1 {
		t.Fatalf("exit %d, ok %v, %d faults, checkpoints %+v: want 0, true, none, one", code, doc.OK, len(doc.Faults), doc.Checkpoints)
	}
	c := doc.Checkpoints[0]
	if c.Host != "127.0.0.1" || c.Simulated || !c.Passed || !c.CheckpointWritten || c.ResumedStep < 3 || c.ThroughputBefore != 800 || c.ThroughputAfter != 800 {
		t.Errorf("%+v: want 127.0.0.1, not simulated, passed, resumed from a checkpoint at 800 samples/s", c)
	}
	// The host ran the workload twice, the second time resuming: the
	// first was killed mid-run, or the resume would have had nothing to do.
	calls, err := os.ReadFile(filepath.Join(root, "var", "log", "gpuform-sim", "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, l := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
		if strings.HasPrefix(l, "gpuform-sim-train ") {
			runs = append(runs, l)
		}
	}
	if len(runs) != 2 || strings.HasSuffix(runs[0], "--resume") || !strings.HasSuffix(runs[1], "--resume") {
		t.Errorf("workload runs on the host: %q", runs)
	}
}

// TestDrillCheckpointLocalWorkloadNotRunWithCatalogue: asked for every
// drill, a simulated node block whose workload would run on this machine
// is listed as not run (with what would allow it) rather than stopping
// the catalogue's drills; asked for by name, it is refused.
func TestDrillCheckpointLocalWorkloadNotRunWithCatalogue(t *testing.T) {
	t.Parallel()
	cfg, diags := spec.Load("testdata/drill-checkpoint-local", spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	targets, notRun, err := drill.CheckpointTargets(cfg, drill.TargetOptions{})
	if err != nil || len(targets) != 0 || len(notRun) != 1 || !strings.Contains(notRun[0], `node "train": host sim://hgx-h100-converged is this machine`) || !strings.Contains(notRun[0], "pass -allow-local") {
		t.Errorf("every drill: targets %v, not run %q, %v", targets, notRun, err)
	}
	if _, _, err := drill.CheckpointTargets(cfg, drill.TargetOptions{Faults: []string{drill.CheckpointDrill}}); err == nil {
		t.Error("-fault checkpoint-restore: not refused")
	}
	if targets, _, err := drill.CheckpointTargets(cfg, drill.TargetOptions{AllowLocal: true}); err != nil || len(targets) != 1 || targets[0].GPUs != 1 {
		t.Errorf("-allow-local: targets %+v, %v; want one at 1 GPU (nothing declares more)", targets, err)
	}
}
