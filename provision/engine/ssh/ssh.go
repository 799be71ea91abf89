// Package ssh is the default engine: verify fans out from this machine
// over one SSH connection per host (provision/verify/runner, through
// provision/target's connector), -parallelism at a time, exactly as
// verify has always run. Multi-node tests are launched from a group's
// first host and isolation pairs from the first of each pair.
package ssh

import (
	"context"

	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/engine"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/provision/verify/runner"
)

// Engine is the SSH fan-out.
type Engine struct{}

var _ engine.Engine = Engine{}

// Name is "ssh".
func (Engine) Name() string { return engine.SSH }

// Verify runs runner.Run: every host is reached through o.Target.
func (Engine) Verify(ctx context.Context, targets []target.Host, o runner.Options) (*report.Document, error) {
	return runner.Run(ctx, targets, o), nil
}

// Bench runs bench.Run: every host is reached through o.Target.
func (Engine) Bench(ctx context.Context, targets []target.Host, o bench.Options) (*bench.Report, error) {
	return bench.Run(ctx, targets, o), nil
}
