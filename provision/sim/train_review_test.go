package sim_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/sim"
)

// TestSimTrainStaysInRoot: the simulated workload, which gpuform drill
// runs on this machine without -allow-local because it writes under the
// simulated root alone, refuses a --ckpt-dir that climbs out of the root
// with "..": the spec's bench command allows "." and "/", and before the
// fix /../../X wrote X/latest beside the root.
func TestSimTrainStaysInRoot(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root, err := sim.Materialize("hgx-h100-converged", filepath.Join(base, "state"))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, "/")
	if err != nil {
		t.Fatal(err)
	}
	// From the root up to /, then base's own path: X resolves to
	// base/escaped, outside the root.
	up := "/" + rel + base + "/escaped"
	tr := sim.New("sim://hgx-h100-converged", root)
	res := run(t, tr, "gpuform-sim-train --gpus=1 --ckpt-dir="+up+" --steps=2 --save-every=1 --step-time=0.01")
	if _, err := os.Stat(filepath.Join(base, "escaped")); err == nil {
		t.Errorf("--ckpt-dir=%s wrote outside the simulated root (%s)", up, filepath.Join(base, "escaped"))
	}
	if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "..") {
		t.Errorf("exit %d, stderr %q; want a refusal naming ..", res.ExitCode, res.Stderr)
	}
}
