package main

import (
	"testing"

	"github.com/gpuform/gpuform/kb"
)

// testKB parses the embedded knowledge base, as each Run does.
func testKB(t *testing.T) *kb.KB {
	t.Helper()
	k, err := loadKB()
	if err != nil {
		t.Fatal(err)
	}
	return k
}
