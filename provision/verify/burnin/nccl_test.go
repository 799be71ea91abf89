package burnin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/verify/nccltest"
)

func ncclResult(t *testing.T, name string) nccltest.Result {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "nccltest", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs, err := nccltest.Parse(f)
	if err != nil || len(runs) == 0 {
		t.Fatalf("%s: %v", name, err)
	}
	return nccltest.Result{Runs: runs}
}

// TestNCCLFrom reads a published single-node 8x H100 all_reduce_perf run
// as the burn-in's iterations: its largest size's busbw and #wrong 0; an
// iteration with #wrong (the same capture, modelled with 4 wrong values),
// one that failed and a -c 0 run each fail burnin.nccl.
func TestNCCLFrom(t *testing.T) {
	t.Parallel()
	good := ncclResult(t, "all_reduce_perf-8xH100-nvswitch-1node.txt")
	healthy := NCCLFrom("all_reduce", []nccltest.Result{good, good, good})
	if len(healthy.BusBWGBs) != 3 || healthy.BusBWGBs[0] < 400 || healthy.Wrong[0] != 0 || len(healthy.Failures) != 0 {
		t.Fatalf("healthy: %+v", healthy)
	}
	one(t, judgeNCCL([]NCCLRun{healthy}, Limits{}), "burnin.nccl", "all_reduce", StatusPass, "3 iterations, #wrong 0")

	wrong := ncclResult(t, "all_reduce_perf-8xH100-nvswitch-1node.txt")
	last := &wrong.Runs[len(wrong.Runs)-1]
	row := &last.Rows[len(last.Rows)-1]
	four := int64(4) // modelled: no published run shows a non-zero #wrong at the largest size
	row.InPlace.Wrong = &four
	one(t, judgeNCCL([]NCCLRun{NCCLFrom("all_reduce", []nccltest.Result{good, wrong, good})}, Limits{}), "burnin.nccl", "all_reduce", StatusFail, "#wrong 4 over 3 iterations")

	failed := nccltest.Result{Failure: "timed out after 10m"}
	one(t, judgeNCCL([]NCCLRun{NCCLFrom("all_reduce", []nccltest.Result{good, failed, good})}, Limits{}), "burnin.nccl", "all_reduce", StatusFail, "1 of 3 iterations failed: iteration 2: timed out")

	nocheck := ncclResult(t, "all_reduce_perf-8xH100-nvswitch-1node.txt")
	nocheck.Runs[len(nocheck.Runs)-1].Validation = false
	r := NCCLFrom("all_reduce", []nccltest.Result{good, nocheck})
	if len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "-c 0") {
		t.Errorf("-c 0 iteration: %+v", r)
	}
}
