package lint

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// hostileValues replace, one at a time, the value of every attribute of
// every example: the wrong types, shapes and sizes an operator's typo or a
// bad variable produces. Each replaced spec must load and lint without a
// panic or an "Internal error", and every error the loader reports must
// point into the spec.
var hostileValues = []string{
	`null`,
	`"x"`,
	`-1`,
	`1e400`,
	`[]`,
	`{}`,
	`[null]`,
	`{ a = null }`,
	`tomap({ a = "b" })`,
	`[{ index = 0 }, { index = "x", extra = [1] }]`,
	`"ünïcødé\u0000"`,
	`nope.missing`,
}

// TestExamplesMutated is a deterministic, table-shaped cousin of FuzzLint
// over the shipped examples (see hostileValues).
func TestExamplesMutated(t *testing.T) {
	dirs, err := filepath.Glob("../examples/*")
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, dir := range dirs {
		names, _ := filepath.Glob(filepath.Join(dir, "*.gpuform.hcl"))
		if len(names) == 0 {
			continue
		}
		files := map[string][]byte{}
		for _, n := range names {
			src, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			files[filepath.Base(n)] = src
		}
		for _, name := range sortedNames(files) {
			src := files[name]
			f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatalf("%s/%s: %s", dir, name, diags.Error())
			}
			for _, rng := range attributeValueRanges(f.Body.(*hclsyntax.Body)) {
				for _, val := range hostileValues {
					mutated := string(src[:rng.Start.Byte]) + val + string(src[rng.End.Byte:])
					label := fmt.Sprintf("%s/%s:%d replaced by %s", filepath.Base(dir), name, rng.Start.Line, val)
					in := map[string][]byte{}
					for k, v := range files {
						in[k] = v
					}
					in[name] = []byte(mutated)
					lintOnce(t, label, in)
					runs++
				}
			}
		}
	}
	if runs < 500 {
		t.Errorf("only %d mutated specs; the examples should give many more", runs)
	}
}

func lintOnce(t *testing.T, label string, files map[string][]byte) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: panic: %v", label, r)
		}
	}()
	cfg, diags := spec.LoadFiles(files, spec.LoadOptions{BuiltinModules: modules.FS()})
	for _, d := range diags {
		if d.Severity == hcl.DiagError && (d.Subject == nil || d.Subject.Filename == "") {
			t.Errorf("%s: error without a place: %s: %s", label, d.Summary, d.Detail)
		}
	}
	_, ldiags := Run(cfg, Options{Now: testNow})
	for _, d := range ldiags {
		if strings.HasPrefix(d.Summary, "Internal error") {
			t.Errorf("%s: %s: %s", label, d.Summary, d.Detail)
		}
	}
}

// attributeValueRanges lists the value range of every attribute in body
// and its nested blocks.
func attributeValueRanges(body *hclsyntax.Body) []hcl.Range {
	var out []hcl.Range
	for _, a := range body.Attributes {
		out = append(out, a.Expr.Range())
	}
	for _, b := range body.Blocks {
		out = append(out, attributeValueRanges(b.Body)...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Byte < out[j].Start.Byte })
	return out
}

func sortedNames(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
