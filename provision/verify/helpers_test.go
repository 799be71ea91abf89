package verify

import (
	"os"
	"path/filepath"
	"sort"
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

// failed lists the ids of failed and errored checks, sorted.
func failed(results []CheckResult) []string {
	var ids []string
	for _, r := range results {
		if r.Status == StatusFail || r.Status == StatusError {
			ids = append(ids, r.ID)
		}
	}
	sort.Strings(ids)
	return ids
}
