package lint

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testNow is the fixed "today" of every test, so end-of-life results do
// not change as the calendar moves.
var testNow = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// testKB is the knowledge base of every test, parsed once from the
// embedded tables as the CLI does.
var testKB = func() *kb.KB {
	k, err := kb.Load()
	if err != nil {
		panic(err)
	}
	return k
}()

// loadSpec evaluates in-memory files with the built-in modules; the fixture
// must load without errors, since rule tests are about lint, not the loader.
func loadSpec(t testing.TB, files map[string]string) *spec.Config {
	t.Helper()
	src := map[string][]byte{}
	for n, s := range files {
		src[n] = []byte(s)
	}
	cfg, diags := spec.LoadFiles(src, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatalf("fixture does not load:\n%s", diags.Error())
	}
	return cfg
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// findingLines renders findings as "file:line:col severity rule: summary".
func findingLines(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s:%d:%d %s %s: %s", f.Range.Filename, f.Range.Start.Line, f.Range.Start.Column, f.Severity, f.Rule, f.Summary))
	}
	return out
}

func compareGolden(t *testing.T, path string, got []string) {
	t.Helper()
	text := strings.Join(got, "\n") + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(text, "\n")); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, d)
	}
}

// TestRules runs every rule over its two fixtures in testdata/rules/<rule>:
// fires.gpuform.hcl must produce findings of the rule, exactly those in
// expected.golden (file, line, column, severity, summary); clean.gpuform.hcl
// must produce none of them. Findings of other rules are ignored, so each
// fixture tests one rule.
func TestRules(t *testing.T) {
	for _, r := range Rules() {
		if r.Check == nil {
			continue
		}
		t.Run(r.Name, func(t *testing.T) {
			dir := filepath.Join("testdata", "rules", r.Name)
			for _, kind := range []string{"fires", "clean"} {
				name := kind + ".gpuform.hcl"
				cfg := loadSpec(t, map[string]string{name: readFile(t, filepath.Join(dir, name))})
				now := testNow
				// A rule about time (knowledge_base_age) moves its fires
				// case to the date in fires.now.
				if b, err := os.ReadFile(filepath.Join(dir, kind+".now")); err == nil {
					var perr error
					if now, perr = time.Parse(time.DateOnly, strings.TrimSpace(string(b))); perr != nil {
						t.Fatal(perr)
					}
				}
				res, diags := Run(cfg, Options{KB: testKB, Now: now, MinSeverity: Info})
				if diags.HasErrors() {
					t.Fatal(diags.Error())
				}
				var mine []Finding
				for _, f := range res.Findings {
					if f.Rule == r.Name {
						mine = append(mine, f)
					}
				}
				if kind == "clean" {
					if len(mine) > 0 {
						t.Errorf("clean fixture has findings:\n%s", strings.Join(findingLines(mine), "\n"))
					}
					continue
				}
				if len(mine) == 0 {
					t.Errorf("fires fixture has no %s finding", r.Name)
				}
				for _, f := range mine {
					if f.Detail == "" {
						t.Errorf("%s: finding without detail: %s", r.Name, f.Summary)
					}
					if f.Range.Filename == "" || f.Range.Start.Line == 0 {
						t.Errorf("%s: finding without range: %s", r.Name, f.Summary)
					}
				}
				compareGolden(t, filepath.Join(dir, "expected.golden"), findingLines(mine))
			}
		})
	}
}

// TestRuleCatalogue checks the registry itself: unique snake_case names,
// a severity, a summary and a documented link for every rule.
func TestRuleCatalogue(t *testing.T) {
	docs := readFile(t, filepath.Join("..", "docs", "rules.md"))
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.Name] {
			t.Errorf("rule %s registered twice", r.Name)
		}
		seen[r.Name] = true
		if strings.ToLower(r.Name) != r.Name || strings.ContainsAny(r.Name, " -") {
			t.Errorf("rule %q is not snake_case", r.Name)
		}
		if r.Severity < Info || r.Severity > Error || r.Summary == "" {
			t.Errorf("rule %s: severity %v summary %q", r.Name, r.Severity, r.Summary)
		}
		if r.Link != "docs/rules.md#"+r.Name {
			t.Errorf("rule %s: link %q", r.Name, r.Link)
		}
		i := strings.Index(docs, "\n## "+r.Name+"\n")
		if i < 0 {
			t.Errorf("rule %s has no section \"## %s\" in docs/rules.md", r.Name, r.Name)
			continue
		}
		section := docs[i+1:]
		if j := strings.Index(section[3:], "\n## "); j >= 0 {
			section = section[:j+3]
		}
		for _, want := range []string{"**What.**", "**Why.**", "https://", "**Fix.**", "**Example.**", "```hcl"} {
			if !strings.Contains(section, want) {
				t.Errorf("docs/rules.md section %s lacks %q", r.Name, want)
			}
		}
	}
}
