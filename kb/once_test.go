package kb

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryTableOnce fails when a data table exists twice in the
// repository, by name or by content: a copy drifts from its original (the
// NCCL thresholds once lived here and in provision/verify, with two
// parsers), so every package reads the one in this knowledge base.
func TestEveryTableOnce(t *testing.T) {
	root := ".."
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	byName := map[string]string{}
	byContent := map[[32]byte]string{}
	tables := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// Test fixtures may copy tables on purpose.
			if n := d.Name(); n == ".git" || n == "testdata" || n == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".tsv") {
			return nil
		}
		tables++
		rel, _ := filepath.Rel(root, path)
		if prev, dup := byName[d.Name()]; dup {
			t.Errorf("table %s exists twice: %s and %s", d.Name(), prev, rel)
		}
		byName[d.Name()] = rel
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		if prev, dup := byContent[sum]; dup {
			t.Errorf("%s is a copy of %s", rel, prev)
		}
		byContent[sum] = rel
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if tables < 10 {
		t.Fatalf("found %d tables; the walk missed the knowledge base", tables)
	}
}
