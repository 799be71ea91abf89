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

// TestKBLoadedOncePerRun: a run's loader parses the tables once and hands
// every command the same knowledge base; the loader is per run, never a
// package-level value (the global kb.Default it replaces).
func TestKBLoadedOncePerRun(t *testing.T) {
	s := Streams{kb: newKBLoader()}
	a, err := s.KB()
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.KB()
	if err != nil {
		t.Fatal(err)
	}
	if a == nil || a != b {
		t.Fatalf("one run's loader returned %p then %p; want one knowledge base", a, b)
	}
	other := Streams{kb: newKBLoader()}
	c, err := other.KB()
	if err != nil {
		t.Fatal(err)
	}
	if c == a {
		t.Error("two runs share a knowledge base: the loader is not per run")
	}
}
