package drill

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/spec"
)

// checkpointBench is a bench block of the simulated training stand-in:
// 14 steps of 0.1 s, a checkpoint every 3, killed after 1 s (near step
// 9), resumed to step 14.
func checkpointBench(t *testing.T, steps int, dir bool) *spec.Bench {
	t.Helper()
	dirAttr := ""
	if dir {
		dirAttr = `dir = "/scratch/ckpt"`
	}
	src := fmt.Sprintf(`node "a" {
  hosts = ["sim://hgx-h100-converged"]
  bench {
    command    = "gpuform-sim-train --gpus={gpus} --ckpt-dir=/scratch/ckpt --steps=%[1]d --save-every=3 --step-time=0.1"
    throughput = "samples/s: ([0-9.]+)"
    checkpoint {
      resume_command = "gpuform-sim-train --gpus={gpus} --ckpt-dir=/scratch/ckpt --steps=%[1]d --save-every=3 --step-time=0.1 --resume"
      resumed        = "resumed from step ([0-9]+)"
      kill_after     = "1s"
      %[2]s
    }
  }
}
`, steps, dirAttr)
	cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(src)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return cfg.Nodes[0].Bench
}

// TestCheckpointDrill (issue 38): the checkpoint-restore drill passes a
// workload that resumes from its checkpoint at its throughput, and fails
// each broken resume the training stand-in can be given, saying why: a
// checkpoint never written (seen in the directory when the spec names
// it, else by the resume starting over), a resume from step 0, a resumed
// run at half the speed, and a run that ends before it is killed.
func TestCheckpointDrill(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, fault string
		steps       int
		dir         bool
		detected    bool
		why         string
	}{
		{name: "resumes", steps: 14, dir: true, detected: true},
		{name: "checkpoint-lost-dir", fault: "checkpoint=lost", steps: 14, dir: true, why: "the killed run wrote no file in /scratch/ckpt in 1s"},
		{name: "checkpoint-lost", fault: "checkpoint=lost", steps: 14, why: `the resumed run printed no line matching resumed "resumed from step ([0-9]+)"`},
		{name: "resume-from-zero", fault: "resume=from_zero", steps: 14, dir: true, why: "the resumed run started over from step 0"},
		{name: "slow-after-resume", fault: "resumed_throughput=half", steps: 14, detected: true, why: "throughput after the resume 1600 is 50.0% below the 3200 before the kill (max_throughput_loss 10.0%)"},
		{name: "ends-before-kill", steps: 3, why: "the workload ended (exit status 0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			host := sim.Scheme + BaseProfile + "/ckpt-" + tc.name
			root, err := sim.MaterializeHost(host, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if tc.fault != "" {
				if err := sim.PlantFaults(root, []byte("workload "+tc.fault+"\n")); err != nil {
					t.Fatal(err)
				}
			}
			tg := CheckpointTarget{Node: "a", Host: spec.Host{Name: host}, Profile: BaseProfile, Bench: checkpointBench(t, tc.steps, tc.dir), GPUs: 8}
			r := runCheckpoint(context.Background(), sim.New(host, root), tg, time.Now)
			if r.Error != "" {
				t.Fatalf("error: %s", r.Error)
			}
			wantPass := tc.why == ""
			if r.Passed != wantPass || r.Detected != tc.detected || !strings.HasPrefix(r.Why, tc.why) {
				t.Errorf("passed %v detected %v why %q; want %v, %v, %q", r.Passed, r.Detected, r.Why, wantPass, tc.detected, tc.why)
			}
			if tc.detected && (r.ResumedStep < 3 || r.ResumedStep >= int64(tc.steps)) {
				t.Errorf("resumed from step %d, want a checkpoint of the killed run (3..%d)", r.ResumedStep, tc.steps-1)
			}
			if tc.steps > 3 && (r.ThroughputBefore != 3200 || r.KilledAfter < time.Second) {
				t.Errorf("before the kill: throughput %g after %s; want 3200 (8 GPUs × 400) and at least 1s", r.ThroughputBefore, r.KilledAfter)
			}
			if wantPass && (r.ThroughputAfter != 3200 || r.ThroughputLoss != 0 || !r.CheckpointWritten) {
				t.Errorf("after the resume: throughput %g loss %g, checkpoint written %v", r.ThroughputAfter, r.ThroughputLoss, r.CheckpointWritten)
			}
		})
	}
}
