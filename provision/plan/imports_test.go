package plan

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPlanDoesNotImportApply keeps plan below apply: Run makes the whole
// plan, Slurm preview included (slurm.go), and apply reads it. An import
// of apply, direct or through another package, would let the plan depend
// on how it is carried out, the edge this package once had for the Slurm
// preview. go list -deps sees the transitive imports (Go's ban on import
// cycles catches only packages that import plan back).
func TestPlanDoesNotImportApply(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || !strings.HasSuffix(deps[len(deps)-1], "/provision/plan") {
		t.Fatalf("go list -deps did not list provision/plan last:\n%s", out)
	}
	for _, d := range deps {
		for _, upper := range []string{"provision/apply", "provision/verify", "cmd"} {
			if prefix := "github.com/gpuform/gpuform/" + upper; d == prefix || strings.HasPrefix(d, prefix+"/") {
				t.Errorf("provision/plan depends on %s: plan must not import apply, verify or cmd", d)
			}
		}
	}
}
