package main

import (
	"context"
	"os"
	"testing"
)

// TestMain lets the test binary stand in for gpuform when verify copies
// "itself" to a node and runs "agent nvml --json": without this, the test
// binary would run the whole suite again on the node, recursively.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "agent" {
		os.Exit(Run(context.Background(), os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Environ: os.Environ()}))
	}
	os.Exit(m.Run())
}
