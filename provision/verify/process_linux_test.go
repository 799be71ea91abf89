package verify

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpuform/gpuform/internal/cpulist"
	"github.com/gpuform/gpuform/provision/bind"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// setAffinity binds process pid to cpus, as `gpuform bind` binds itself
// before exec.
func setAffinity(pid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return unix.SchedSetaffinity(pid, &set)
}

// TestProcessBindingRealProcess starts real processes on this machine,
// binds one with sched_setaffinity as `gpuform bind` does, and judges
// them through the code that reads /proc on a node: the bound one within
// NUMA node 0's CPUs (/sys/devices/system/node/node0/cpulist) passes,
// one the test never bound fails, and one that exited is an error.
func TestProcessBindingRealProcess(t *testing.T) {
	raw, err := os.ReadFile("/sys/devices/system/node/node0/cpulist")
	if err != nil {
		t.Fatalf("this machine shows no NUMA node 0 (%v): the test needs Linux sysfs", err)
	}
	node0 := strings.TrimSpace(string(raw))
	cpus, err := cpulist.Parse(node0)
	if err != nil || len(cpus) == 0 {
		t.Fatalf("node0 cpulist %q: %v", node0, err)
	}
	f := &facts.Node{NUMA: []facts.NUMANode{{ID: 0, CPUs: node0}}, RDMA: []facts.RDMADevice{{Name: "mlx5_0"}}}
	n := loadSpecNode(t, `
node "n" {
  hosts = ["gpu1"]
  numa {
    bind {
      gpus = [0]
      node = 0
    }
  }
  affinity {
    gpu_nic = { 0 = "mlx5_0" }
  }
}`)
	start := func(env ...string) *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		cmd.Env = append(os.Environ(), env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		// Start returns once exec has begun; on a loaded machine the new
		// image's environment can show in /proc a moment later.
		environ := fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if b, err := os.ReadFile(environ); err == nil && len(b) > 0 {
				break
			}
		}
		return cmd
	}
	judge := func(pid int) CheckResult {
		t.Helper()
		rep := &nvmlfacts.Report{Source: nvmlfacts.SourceNVML, GPUs: []nvmlfacts.GPU{{Index: 0}},
			Processes: &nvmlfacts.Processes{List: []nvmlfacts.Process{nvmlfacts.ReadProcess("", 0, pid)}}}
		got := checkProcesses(Expectation{KB: testKB, Spec: n, Processes: true}, rep, gpuIdentity{}, f)
		if len(got) != 1 {
			t.Fatalf("%d results", len(got))
		}
		return got[0]
	}

	b, err := bind.Compute(n, bind.FactsCPULists(f))
	if err != nil {
		t.Fatal(err)
	}
	bound := start(b.GPUs[0].Env()...)
	// The last CPU of node 0 only: within the node however many CPUs the
	// machine has.
	if err := setAffinity(bound.Process.Pid, cpus[len(cpus)-1:]); err != nil {
		t.Fatal(err)
	}
	if r := judge(bound.Process.Pid); r.Status != StatusPass || !strings.Contains(r.Observed, "CPUs "+strconv.Itoa(cpus[len(cpus)-1])) || !strings.Contains(r.Observed, "NCCL_IB_HCA==mlx5_0") {
		t.Errorf("bound process: %+v", r)
	}

	// Started as a job launcher starts it: no NIC variable. On a
	// machine with several NUMA nodes its CPUs leave node 0 too.
	unbound := start()
	r := judge(unbound.Process.Pid)
	if r.Status != StatusFail || !strings.Contains(r.Message, "has no NCCL_IB_HCA") {
		t.Errorf("unbound process: %+v", r)
	}
	if all, _ := filepath.Glob("/sys/devices/system/node/node[1-9]*"); len(all) > 0 && !strings.Contains(r.Message, "outside its GPU's NUMA node") {
		t.Errorf("unbound process on a %d-node machine: %+v", len(all)+1, r)
	}

	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if r := judge(gone.Process.Pid); r.Status != StatusError || !strings.Contains(r.Message, "exited") {
		t.Errorf("exited process: %+v", r)
	}
}
