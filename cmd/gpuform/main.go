// Command gpuform is a Terraform-style tool for GPU servers: it lints a spec
// of the node an operator wants, plans the changes, applies them over SSH and
// verifies the result through NVML and NCCL self-tests.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Environ: os.Environ()})
	stop()
	os.Exit(code)
}
