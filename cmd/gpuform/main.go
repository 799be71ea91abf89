// Command gpuform is a Terraform-style tool for GPU servers: it lints a spec
// of the node an operator wants, plans the changes, applies them over SSH and
// verifies the result through NVML and NCCL self-tests.
package main

import (
	"os"
	"runtime/debug"
)

func main() {
	// A Go runtime fatal error (stack overflow, out of memory, concurrent
	// map writes) or an unrecovered panic exits with status 2 by default,
	// which plan -detailed-exitcode reads as "changes present" and lint as
	// "findings". With crash tracebacks the runtime prints the same report
	// and then dies of SIGABRT instead: a shell sees 134, os/exec a signal,
	// never 0 or 2 (docs/guide/contracts.md). A re-exec'ing supervisor could map
	// it to a number, but would stand between the terminal and the command
	// (job control, the two-signal contract, the confirmation prompt).
	debug.SetTraceback("crash")
	crashForTest()
	in, ctx, stop := watchSignals(os.Stderr, os.Exit)
	code := Run(ctx, os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Environ: os.Environ(), interrupts: in})
	stop()
	os.Exit(code)
}
