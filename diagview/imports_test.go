package diagview

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps diagview below lint: validate and fmt render spec
// diagnostics through it without lint, so of gpuform it may import only
// the JSON format_version (lint imports diagview, never the reverse).
func TestImports(t *testing.T) {
	const module = "github.com/gpuform/gpuform/"
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module) && p != module+"internal/jsonformat" {
				t.Errorf("%s imports %s: diagview may import only internal/jsonformat of gpuform", path, p)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("checked %d files; the glob missed the package", checked)
	}
}
