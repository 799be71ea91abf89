package drill

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// scripted is a node whose workload runs are given: the first run's
// result and how long it took, and the resumed run's; mktemp, find and
// rm answer as a node with a fresh checkpoint would. Its clock advances
// by each run's length.
type scripted struct {
	mu sync.Mutex
	// unbounded lists the commands run without a deadline.
	unbounded     []string
	clock         time.Time
	first, resume transport.Result
	firstTook     time.Duration
	resumeTook    time.Duration
}

func (s *scripted) Host() string { return "node1" }
func (s *scripted) Close() error { return nil }
func (s *scripted) now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clock
}

func (s *scripted) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := ctx.Deadline(); !ok {
		s.unbounded = append(s.unbounded, strings.Fields(cmd.Script)[1])
	}
	switch {
	case strings.Contains(cmd.Script, "mktemp"):
		return transport.Result{Stdout: []byte("/tmp/gpuform-drill.Ab12Cd\n")}, nil
	case strings.Contains(cmd.Script, "find "):
		return transport.Result{Stdout: []byte("/scratch/ckpt/step-9.pt\n")}, nil
	case strings.Contains(cmd.Script, "--resume"):
		s.clock = s.clock.Add(s.resumeTook)
		return s.resume, nil
	case strings.Contains(cmd.Script, "timeout -s KILL"):
		s.clock = s.clock.Add(s.firstTook)
		return s.first, nil
	}
	return transport.Result{}, nil
}

// TestCheckpointVerdicts (issue 38 review): the checkpoint drill passes
// only a run that the node's timeout killed and a resume that printed a
// step above 0 and a finite throughput within the bound. Each case's
// outputs are written here, not produced by the code under test.
func TestCheckpointVerdicts(t *testing.T) {
	t.Parallel()
	cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(`node "a" {
  hosts = ["node1"]
  bench {
    command    = "train --gpus={gpus}"
    throughput = "samples/s: ([^ \n]+)"
    checkpoint {
      resume_command = "train --gpus={gpus} --resume"
      resumed        = "resumed from step ([0-9]+)"
      dir            = "/scratch/ckpt"
      kill_after     = "30s"
    }
  }
}
`)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	bench := cfg.Nodes[0].Bench
	killed := transport.Result{Stdout: []byte("step 9 samples/s: 3200\n"), ExitCode: -1}
	resumed := transport.Result{Stdout: []byte("resumed from step 9\nstep 10 samples/s: 3150\n")}
	for _, tc := range []struct {
		name          string
		first, resume transport.Result
		firstTook     time.Duration
		why           string
	}{
		{name: "passes", first: killed, resume: resumed, firstTook: 30 * time.Second},
		{name: "killed, status 137 from a shell", first: transport.Result{Stdout: killed.Stdout, ExitCode: 137}, resume: resumed, firstTook: 30 * time.Second},
		{name: "resumed at infinite throughput", first: killed, firstTook: 30 * time.Second,
			resume: transport.Result{Stdout: []byte("resumed from step 9\nstep 10 samples/s: inf\n")},
			why:    "the resumed run printed no throughput"},
		{name: "infinite throughput before the kill", first: transport.Result{Stdout: []byte("step 9 samples/s: +Inf\n"), ExitCode: -1}, firstTook: 30 * time.Second, resume: resumed,
			why: "the workload printed no throughput"},
		{name: "exited 1 on its own at kill_after, not killed", first: transport.Result{Stdout: killed.Stdout, Stderr: []byte("NCCL error: unhandled system error\n"), ExitCode: 1}, firstTook: 30*time.Second + 400*time.Millisecond, resume: resumed,
			why: "the workload exited with status 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tr := &scripted{clock: time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC), first: tc.first, resume: tc.resume, firstTook: tc.firstTook, resumeTook: 20 * time.Second}
			r := runCheckpoint(context.Background(), tr, CheckpointTarget{Node: "a", Host: spec.Host{Name: "node1"}, Bench: bench, GPUs: 8}, tr.now)
			if r.Error != "" {
				t.Fatalf("error: %s", r.Error)
			}
			if want := tc.why == ""; r.Passed != want || !strings.HasPrefix(r.Why, tc.why) {
				t.Errorf("passed %v why %q; want %v, %q", r.Passed, r.Why, want, tc.why)
			}
			// A node's mktemp or a find in a checkpoint directory on a
			// hung file system must not hold the drill for ever.
			if len(tr.unbounded) > 0 {
				t.Errorf("commands run on the node without a time bound: %q", tr.unbounded)
			}
		})
	}
}

// TestCheckpointDirSymlink: a checkpoint directory that is a symbolic
// link to the storage it lives on (/scratch/ckpt -> a parallel file
// system's directory, as sites lay it out) is looked in, not taken for
// the link itself: find without -H saw no file under it, and the drill
// failed a workload that had written its checkpoint.
func TestCheckpointDirSymlink(t *testing.T) {
	t.Parallel()
	host := sim.Scheme + BaseProfile + "/ckpt-symlink"
	root, err := sim.MaterializeHost(host, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "lustre", "job7"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "scratch"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../lustre/job7", filepath.Join(root, "scratch", "ckpt")); err != nil {
		t.Fatal(err)
	}
	tg := CheckpointTarget{Node: "a", Host: spec.Host{Name: host}, Profile: BaseProfile, Bench: checkpointBench(t, 14, true), GPUs: 8}
	r := runCheckpoint(context.Background(), sim.New(host, root), tg, time.Now)
	if r.Error != "" || !r.Passed || !r.CheckpointWritten {
		t.Errorf("error %q passed %v checkpoint written %v why %q; want passed with the checkpoint seen", r.Error, r.Passed, r.CheckpointWritten, r.Why)
	}
}
