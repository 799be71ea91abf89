package lint

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoUpwardImports keeps lint below provision: provision may import
// lint, so lint (and everything under it) must never import provision, or
// the two would depend on each other. The knowledge base both read is kb,
// below them both (kb/imports_test.go).
func TestNoUpwardImports(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "github.com/gpuform/gpuform/provision") || strings.HasPrefix(p, "github.com/gpuform/gpuform/cmd") {
				t.Errorf("%s imports %s: lint must not depend on provision or cmd", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
