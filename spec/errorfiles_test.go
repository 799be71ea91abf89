package spec_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/diagview"
	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

var update = flag.Bool("update", false, "rewrite golden files")

var errorMarker = regexp.MustCompile(`# ERROR: (.+)$`)

type wantErr struct {
	Line    int
	Summary string
}

// TestErrorFiles loads each file under testdata/error-files alone and checks
// that every "# ERROR: summary" marker is matched by an error diagnostic
// starting on that line, and no other errors appear. The rendered text is
// compared with a golden file, so the column and snippet are checked too.
func TestErrorFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/error-files/*.gpuform.hcl")
	if err != nil || len(files) < 15 {
		t.Fatalf("want at least 15 error files, got %d (%v)", len(files), err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".gpuform.hcl")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var want []wantErr
			for i, line := range strings.Split(string(src), "\n") {
				if m := errorMarker.FindStringSubmatch(line); m != nil {
					want = append(want, wantErr{Line: i + 1, Summary: m[1]})
				}
			}
			cfg, diags := spec.LoadFiles(map[string][]byte{path: src}, spec.LoadOptions{
				BuiltinModules: modules.FS(),
				BinaryVersion:  "0.1.0",
			})
			var got []wantErr
			for _, d := range diags {
				if d.Severity != hcl.DiagError {
					continue
				}
				line := 0
				if d.Subject != nil {
					line = d.Subject.Start.Line
				}
				got = append(got, wantErr{Line: line, Summary: d.Summary})
			}
			sort.Slice(got, func(i, j int) bool { return got[i].Line < got[j].Line })
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			var buf bytes.Buffer
			if err := diagview.WriteText(&buf, diags, nil, cfg.Files, diagview.TextOptions{}); err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(path, ".gpuform.hcl") + ".golden"
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			wantText, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if diff := cmp.Diff(string(wantText), buf.String()); diff != "" {
				t.Errorf("rendered diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}
