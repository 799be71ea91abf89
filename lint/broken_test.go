package lint

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// lintMarker is the expectation comment of fixture specs: the rule that must
// report a finding on this line (Terraform's "# ERROR:" fixture style).
var lintMarker = regexp.MustCompile(`#\s*LINT:\s*([a-z0-9_]+)\s*$`)

// markers returns "file:line rule" for every marker in the directory.
func markers(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"+spec.SpecFileSuffix))
	var out []string
	for _, f := range files {
		for i, line := range strings.Split(readFile(t, f), "\n") {
			if m := lintMarker.FindStringSubmatch(line); m != nil {
				out = append(out, fmt.Sprintf("%s:%d %s", f, i+1, m[1]))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestBrokenTrainingCluster lints a copy of examples/training-cluster with
// ten planted mistakes: each marked line must carry a finding of its rule,
// and no other line may carry a warning or an error.
func TestBrokenTrainingCluster(t *testing.T) {
	dir := filepath.Join("testdata", "broken-training-cluster")
	want := markers(t, dir)
	if len(want) != 10 {
		t.Fatalf("fixture has %d markers, want 10", len(want))
	}
	cfg, diags := spec.Load(dir, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	res, diags := Run(cfg, Options{KB: testKB, Now: testNow})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	seen := map[string]bool{}
	var got []string
	for _, f := range res.Findings {
		if f.Severity < Warning {
			continue
		}
		k := fmt.Sprintf("%s:%d %s", f.Range.Filename, f.Range.Start.Line, f.Rule)
		if !seen[k] {
			seen[k] = true
			got = append(got, k)
		}
	}
	sort.Strings(got)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("findings differ from the # LINT markers (-want +got):\n%s\nall findings:\n%s", d, strings.Join(findingLines(res.Findings), "\n"))
	}
	if !res.Failed() {
		t.Error("the broken cluster should fail lint at the default threshold")
	}
}
