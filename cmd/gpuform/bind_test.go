package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gpuform/gpuform/internal/cpulist"
	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/bind"
)

// bindSpec binds GPU 0 to NUMA node 0, which every Linux machine has, and
// pairs it with mlx5_0.
const bindSpec = `
node "here" {
  hosts = ["gpu-here"]
  numa {
    bind {
      gpus = [0]
      node = 0
    }
  }
  affinity {
    gpu_nic = { 0 = "mlx5_0" }
  }
}
node "other" {
  hosts = ["gpu-other"]
  affinity {
    gpu_nic = { 0 = "mlx5_1", 1 = "mlx5_2" }
  }
}
`

func bindSpecDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), bindSpec)
	return dir
}

// runBind runs gpuform bind in-process; the launch is recorded, not run.
func runBind(t *testing.T, env []string, args ...string) (int, *bind.Launch, string) {
	t.Helper()
	var out, errb bytes.Buffer
	var got *bind.Launch
	s := Streams{In: strings.NewReader(""), Out: &out, Err: &errb, Environ: append([]string{"NO_COLOR=1", "PATH=" + os.Getenv("PATH")}, env...),
		launch: func(l *bind.Launch) error { got = l; return nil }}
	code := Run(context.Background(), append([]string{"bind"}, args...), s)
	return code, got, errb.String()
}

func TestBindErrors(t *testing.T) {
	spec := bindSpecDir(t)
	missing := filepath.Join(t.TempDir(), "binding.json")
	bad := filepath.Join(t.TempDir(), "binding.json")
	writeFile(t, bad, "# Managed by gpuform.\n")
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no rank", nil, []string{"-spec", spec, "-node", "here", "--", "true"}, "no local rank: none of LOCAL_RANK, SLURM_LOCALID"},
		{"rank beyond the gpus", []string{"SLURM_LOCALID=1"}, []string{"-spec", spec, "-node", "here", "--", "true"}, `SLURM_LOCALID=1, but the binding of node "here" has 1 GPUs`},
		{"unknown node", nil, []string{"-spec", spec, "-node", "nope", "-gpu", "0", "--", "true"}, "the spec has no node of that name"},
		{"unknown gpu", nil, []string{"-spec", spec, "-node", "here", "-gpu", "3", "--", "true"}, `has no GPU 3 (it has 0)`},
		{"no binding recorded", []string{"LOCAL_RANK=0"}, []string{"-binding", missing, "--", "true"}, "no binding recorded at " + missing},
		{"binding unreadable", []string{"LOCAL_RANK=0"}, []string{"-binding", bad, "--", "true"}, "not a gpuform binding file"},
		{"node without spec", []string{"LOCAL_RANK=0"}, []string{"-node", "here", "--", "true"}, "-node works only with -spec"},
		{"no command", []string{"LOCAL_RANK=0"}, []string{"-spec", spec, "-node", "here"}, "no command to run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, l, stderr := runBind(t, tt.env, tt.args...)
			if code != ExitFailed || l != nil || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, launched %v, stderr %q; want exit 1 and %q", code, l != nil, stderr, tt.want)
			}
		})
	}
}

// TestBindVerbose: -v says what is bound and set; the command's own flags
// after the command name are the command's.
func TestBindVerbose(t *testing.T) {
	spec := bindSpecDir(t)
	code, l, stderr := runBind(t, []string{"OMPI_COMM_WORLD_LOCAL_RANK=1"}, "-spec", spec, "-node", "other", "-v", "-cuda-visible-devices", "sh", "-c", "exit 3", "-v")
	if code != ExitOK || l == nil {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if l.GPU.Index != 1 || !slices.Equal(l.Argv, []string{"sh", "-c", "exit 3", "-v"}) {
		t.Errorf("launch %+v", l)
	}
	for _, want := range []string{"OMPI_COMM_WORLD_LOCAL_RANK=1 → GPU 1: no NUMA node bound, NIC mlx5_2", "CPU affinity and memory policy left as they are", "CUDA_VISIBLE_DEVICES=1", "NCCL_IB_HCA==mlx5_2", "UCX_NET_DEVICES=mlx5_2:1", "exec sh -c exit 3 -v"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("-v output lacks %q:\n%s", want, stderr)
		}
	}
}

// TestBindRealRun runs the built binary for real: gpuform bind -gpu 0
// started with its affinity narrowed to one CPU must give the command
// all of NUMA node 0's CPUs, MPOL_BIND on node 0, and the NIC variables.
func TestBindRealRun(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("gpuform bind is Linux only")
	}
	raw, err := os.ReadFile("/sys/devices/system/node/node0/cpulist")
	if err != nil {
		// Fails in CI, where the real run must happen; skips elsewhere.
		sshtest.Missing(t, fmt.Sprintf("this kernel shows no NUMA node 0 (%v)", err))
	}
	node0, err := cpulist.Parse(strings.TrimSpace(string(raw)))
	if err != nil || len(node0) == 0 {
		t.Fatalf("node0 cpulist %q: %v", raw, err)
	}
	bin := buildGpuform(t)
	spec := bindSpecDir(t)

	cmd := exec.Command(bin, "bind", "-spec", spec, "-node", "here", "-gpu", "0", "--",
		"sh", "-c", "cat /proc/self/status && echo @@ && cat /proc/self/numa_maps && echo @@ && env")
	cmd.Env = append(os.Environ(), "NCCL_IB_HCA=mlx5", "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Start it from a thread pinned to one CPU (the child inherits it), so
	// the node's CPUs in the child are gpuform's doing.
	runtime.LockOSThread()
	var orig, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	one.Set(node0[0])
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	err = cmd.Start()
	if rerr := unix.SchedSetaffinity(0, &orig); rerr != nil {
		t.Fatal(rerr)
	}
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	parts := strings.Split(stdout.String(), "@@\n")
	if len(parts) != 3 {
		t.Fatalf("output:\n%s", stdout.String())
	}
	status, numaMaps, env := parts[0], parts[1], parts[2]

	var allowed []int
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			if allowed, err = cpulist.Parse(strings.TrimSpace(v)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.Equal(allowed, node0) {
		t.Errorf("Cpus_allowed_list %v, want node0's %v", allowed, node0)
	}
	// Every mapping without a policy of its own shows the task's: bind:0.
	lines := strings.Split(strings.TrimSpace(numaMaps), "\n")
	for _, line := range lines {
		if f := strings.Fields(line); len(f) < 2 || f[1] != "bind:0" {
			t.Errorf("numa_maps line %q: policy is not bind:0", line)
			break
		}
	}
	vars := strings.Split(env, "\n")
	for _, want := range []string{"NCCL_IB_HCA==mlx5_0", "UCX_NET_DEVICES=mlx5_0:1"} {
		if !slices.Contains(vars, want) {
			t.Errorf("child environment lacks %s:\n%s", want, env)
		}
	}
	if slices.Contains(vars, "NCCL_IB_HCA=mlx5") {
		t.Errorf("child still has the caller's NCCL_IB_HCA")
	}
}

// TestBindReadsAppliedBinding: apply records the quickstart node's binding
// with the CPUs the host reports, and the launcher, reading that file,
// puts local rank 5 on GPU 5's socket and NIC.
func TestBindReadsAppliedBinding(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", "../../examples/quickstart"); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	file := filepath.Join(simRoot(t, state, "hgx-h100-stale"), bind.File)
	code, l, stderr := runBind(t, []string{"SLURM_LOCALID=5"}, "-binding", file, "-cuda-visible-devices", "--", "true")
	if code != ExitOK || l == nil {
		t.Fatalf("bind: exit %d\n%s", code, stderr)
	}
	if l.GPU.Index != 5 || l.GPU.NUMA != 1 || l.GPU.CPUs != "56-111,168-223" || l.GPU.PCI != "0000:c3:00.0" {
		t.Errorf("SLURM_LOCALID=5 → %s; want GPU 5 (0000:c3:00.0) on NUMA node 1 (CPUs 56-111,168-223)", l.GPU)
	}
	for _, want := range []string{"CUDA_VISIBLE_DEVICES=5", "NCCL_IB_HCA==mlx5_9", "UCX_NET_DEVICES=mlx5_9:1"} {
		if !slices.Contains(l.Env, want) {
			t.Errorf("command environment lacks %s", want)
		}
	}
	// A second plan finds the recorded binding converged.
	code, out, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", "../../examples/quickstart")
	if code != ExitOK {
		t.Errorf("plan after apply: exit %d\n%s%s", code, out, errOut)
	}
}
