package slurmtest_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/slurmtest"
)

// The cluster comes up with this machine as an idle node that runs jobs
// and takes an admin's drain.
func TestStart(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Options{NodeName: "gpu042"})
	id := c.Sbatch("sleep 30")
	c.Drain("RMA 4711")
	state, reason := c.State()
	if !strings.Contains(state, "DRAIN") || reason != "RMA 4711" {
		t.Errorf("after a drain with job %s running: state %q reason %q", id, state, reason)
	}
}

// Served nodes are real nodes: one srun step runs a task on each, and
// each task sees its own node's name.
func TestServedNodes(t *testing.T) {
	c := slurmtest.Start(t, slurmtest.Options{NodeName: "gpu001", ServedNodes: []string{"gpu002", "gpu003"}})
	out, err := c.Client("srun", "-N3", "-w", "gpu[001-003]", "--ntasks-per-node=1", "/bin/sh", "-c", `echo "$SLURMD_NODENAME"`)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(out)
	slices.Sort(got)
	if want := []string{"gpu001", "gpu002", "gpu003"}; !slices.Equal(got, want) {
		t.Errorf("tasks ran on %v, want %v", got, want)
	}
}
