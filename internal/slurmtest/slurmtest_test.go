package slurmtest_test

import (
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
