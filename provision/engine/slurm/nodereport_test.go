package slurm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/report"
)

// framed is node's report of one host with n checks, as the node writes it.
func framed(t testing.TB, node string, n int) []string {
	t.Helper()
	var checks []verify.CheckResult
	for i := range n {
		checks = append(checks, verify.CheckResult{ID: fmt.Sprintf("nvml.check[gpu%d]", i), Status: verify.StatusPass, Observed: strings.Repeat("x", i%97)})
	}
	var b bytes.Buffer
	if err := WriteNodeReport(&b, NewNodeReport(node, []report.Host{report.NewHost("sim://p/"+node, checks, 0)})); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// The frames of several nodes come back however srun interleaves whole
// lines, among other programs' lines; a report that does not add up is
// named, never decoded into a wrong one.
func TestReadNodeReports(t *testing.T) {
	t.Parallel()
	a, b := framed(t, "gpu001", 300), framed(t, "gpu002", 300)
	if len(a) < 3 {
		t.Fatalf("want a report of several lines, got %d", len(a))
	}
	interleave := func(xs ...[]string) string {
		var out []string
		for i := 0; ; i++ {
			more := false
			for _, x := range xs {
				if i < len(x) {
					out = append(out, x[i])
					more = true
				}
			}
			if !more {
				return strings.Join(out, "\n") + "\n"
			}
		}
	}
	noise := []string{"srun: warning: something", "gpuform-report-v1 bad/name 0 AAAA", "gpuform-report-v1"}
	for _, tc := range []struct {
		name         string
		out          string
		limit        int
		wantReports  []string
		wantProblems map[string]string
	}{
		{"interleaved with noise", interleave(a, b, noise), 0, []string{"gpu001", "gpu002"}, map[string]string{}},
		{"cut before the closing line", interleave(a[:len(a)-1], b), 0, []string{"gpu002"},
			map[string]string{"gpu001": fmt.Sprintf("its report ended after %d line(s), without its closing line (the task was killed or its output cut)", len(a)-1)}},
		{"a line lost", interleave(append(append([]string{}, a[:1]...), a[2:]...)), 0, nil,
			map[string]string{"gpu001": "its report's line 2 arrived out of order or garbled"}},
		{"over the limit", interleave(a), 600, nil, map[string]string{"gpu001": "its report passed the limit of 600 bytes"}},
		{"a line changed", interleave(append(append([]string{}, a[:len(a)-2]...), strings.Replace(a[len(a)-2], "A", "B", 1), a[len(a)-1])), 0, nil,
			map[string]string{"gpu001": "its report's SHA-256 does not match its closing line"}},
		{"two reports", interleave(a, a), 0, nil, map[string]string{"gpu001": "its report's line 0 arrived out of order or garbled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reports, problems := ReadNodeReports(strings.NewReader(tc.out), tc.limit)
			var got []string
			for _, n := range []string{"gpu001", "gpu002"} {
				if r, ok := reports[n]; ok {
					got = append(got, n)
					if hs := r.HostReports(); len(hs) != 1 || hs[0].Host != "sim://p/"+n || len(hs[0].Checks) != 300 {
						t.Errorf("%s's report: %d hosts", n, len(hs))
					}
				}
			}
			if diff := cmp.Diff(tc.wantReports, got); diff != "" {
				t.Errorf("reports (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantProblems, problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzReadNodeReports: whatever a step prints, reading it neither panics
// nor returns a report for a node whose frames did not add up.
func FuzzReadNodeReports(f *testing.F) {
	f.Add(strings.Join(framed(f, "gpu001", 3), "\n"))
	f.Add("gpuform-report-v1 gpu001 end 0 00\n")
	f.Fuzz(func(t *testing.T, s string) {
		reports, problems := ReadNodeReports(strings.NewReader(s), 1<<16)
		for n, r := range reports {
			if r.Node != n {
				t.Errorf("report filed under %s names %s", n, r.Node)
			}
			if _, both := problems[n]; both {
				t.Errorf("%s has both a report and a problem", n)
			}
		}
	})
}
