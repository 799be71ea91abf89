package verify

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuform/gpuform/provision/verify/nccltest"
)

// parseFixture reads a real nccl-tests output from nccltest's testdata
// (see provision/verify/nccltest/testdata/README.md for its source).
func parseFixture(t testing.TB, name string) []nccltest.Run {
	t.Helper()
	f, err := os.Open(filepath.Join("nccltest", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs, err := nccltest.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}
