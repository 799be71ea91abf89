package main

import (
	"context"
	"os"
	"testing"
)

// Most tests here run the CLI in-process against simulated nodes, sshd, a
// real Slurm or a Debian root, each in its own temporary state, and spend
// their time waiting: they call t.Parallel() (scripts/test.sh runs four at
// once). A test stays sequential when it changes what the whole process
// shares (t.Setenv, t.Chdir), or judges elapsed time, the process's memory
// or a race between processes that other tests' load would disturb
// (TestSignals, TestApplyLockTimeout, TestBoundedWork, the Slurm circuit
// breaker tests); sequential tests all run before the parallel ones start.

// TestMain lets the test binary stand in for gpuform when verify copies
// "itself" to a node and runs "agent nvml --json": without this, the test
// binary would run the whole suite again on the node, recursively.
func TestMain(m *testing.M) {
	// "gpuform-cli ARGS" runs the CLI as a process of its own, for tests
	// that need its real environment (slurmd's bare one for a health check).
	if len(os.Args) > 1 && os.Args[1] == "gpuform-cli" {
		os.Exit(Run(context.Background(), os.Args[2:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Environ: os.Environ()}))
	}
	if len(os.Args) > 1 && os.Args[1] == "agent" {
		os.Exit(Run(context.Background(), os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Environ: os.Environ()}))
	}
	code := m.Run()
	removeBuiltGpuform()
	os.Exit(code)
}
