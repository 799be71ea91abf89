package kb

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps the knowledge base at the bottom of the import graph:
// lint and provision both read it, so it may import nothing of gpuform but
// spec (the component vocabulary), or the two would judge from different
// layers of each other.
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
			if strings.HasPrefix(p, module) && p != module+"spec" {
				t.Errorf("%s imports %s: kb may import only spec of gpuform", path, p)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d files; the glob missed the package", checked)
	}
}
