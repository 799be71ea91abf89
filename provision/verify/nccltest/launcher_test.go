package nccltest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFailureCauses: what NCCL printed about a failure is kept, every
// line of it, and the line naming the error leads the verdict, also ahead
// of the command's exit status.
func TestFailureCauses(t *testing.T) {
	r := parseFile(t, "all_reduce_perf-2xRTX5090-nccl-debug-info-cuda-failure.txt")
	if len(r) != 1 {
		t.Fatalf("%d runs", len(r))
	}
	run := r[0]
	if run.NCCLVersion != "2.25.1+cuda12.8" {
		t.Errorf("NCCL version from the INFO line: %q", run.NCCLVersion)
	}
	if run.Network != "Socket" {
		t.Errorf("network %q, want Socket (\"Using network Socket\")", run.Network)
	}
	// The capture's five WARN lines (24, 26, 29, 31 and 66), in order.
	wantCauses := []string{
		"GENOA-06:4766:4781 [1] graph/search.cc:1135 NCCL WARN Could not find a path for pattern 4, falling back to simple order",
		"GENOA-06:4766:4781 [1] graph/search.cc:1135 NCCL WARN Could not find a path for pattern 1, falling back to simple order",
		"GENOA-06:4766:4780 [0] graph/search.cc:1135 NCCL WARN Could not find a path for pattern 4, falling back to simple order",
		"GENOA-06:4766:4780 [0] graph/search.cc:1135 NCCL WARN Could not find a path for pattern 1, falling back to simple order",
		"GENOA-06:4766:4766 [1] enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'",
	}
	if diff := cmp.Diff(wantCauses, run.Causes); diff != "" {
		t.Errorf("causes, want the 4 graph/search warnings and the Cuda failure (-want +got):\n%s", diff)
	}
	res := Result{Runs: r, ExitCode: 3, Failure: "exit status 3 (NCCL error)"}
	v := res.Judge(0)
	if v.Pass || len(v.Reasons) < 3 {
		t.Fatalf("verdict %+v", v)
	}
	if !strings.HasSuffix(v.Reasons[0], "enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'") {
		t.Errorf("first reason %q, want the Cuda failure WARN line", v.Reasons[0])
	}
	msg := strings.Join(v.Reasons, "; ")
	for _, want := range []string{"Test NCCL failure common.cu:392", "exit status 3 (NCCL error)", "Could not find a path for pattern 1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("reasons lack %q: %q", want, msg)
		}
	}
	if strings.Count(msg, "Could not find a path for pattern 4") != 1 {
		t.Errorf("the same warning from two ranks is repeated: %q", msg)
	}
	if len(v.Causes) != 6 {
		t.Errorf("verdict keeps %d causes, want every one (5 WARN + the Test NCCL failure): %q", len(v.Causes), v.Causes)
	}

	warnOnly := parseFile(t, "nccl-warn-only-nvls-cuda-failure-h800.txt")
	v = (Result{Runs: warnOnly, ExitCode: 1, Failure: "exit status 1 (internal error)"}).Judge(0)
	if v.Pass || !strings.Contains(v.Reasons[0], "transport/nvls.cc:158 NCCL WARN Cuda failure 1 'invalid argument'") {
		t.Errorf("WARN-only run: %+v", v)
	}
	if strings.Contains(strings.Join(v.Reasons, "; "), "no result rows") {
		t.Errorf("WARN-only run reported as no result rows: %q", v.Reasons)
	}

	// Standard error carries the warning (NCCL_DEBUG_FILE=/dev/stderr).
	stderr := []byte("node2:242431:242479 [5] transport/nvls.cc:158 NCCL WARN Cuda failure 1 'invalid argument'\nnode2:242431:242475 [1] NCCL INFO init.cc:1277 -> 1\n")
	res = Result{Runs: parseFile(t, "all_reduce_perf-2xRTX5090-pcie-nccl-failure.txt"), ExitCode: 3, Failure: "exit status 3 (NCCL error)", StderrCauses: Causes(stderr)}
	v = res.Judge(0)
	if len(res.StderrCauses) != 1 || !strings.Contains(v.Reasons[0], "NCCL WARN Cuda failure 1 'invalid argument'") {
		t.Errorf("stderr cause not leading: %q", v.Reasons)
	}
}
