//go:build !cgo

package nvmlfacts

import (
	"context"
	"errors"
	"io"
)

// ErrNoCgo is returned by RunAgent in binaries built with CGO_ENABLED=0:
// go-nvml (and its mocks) need cgo, so such a binary cannot be the agent and
// verify falls back to nvidia-smi.
var ErrNoCgo = errors.New("this gpuform was built without cgo and cannot read NVML; verify falls back to nvidia-smi -q -x")

// RunAgent always fails with ErrNoCgo in a build without cgo.
func RunAgent(ctx context.Context, w io.Writer, opts AgentOptions) error { return ErrNoCgo }

// CollectAgent always fails with ErrNoCgo in a build without cgo.
func CollectAgent(ctx context.Context, opts AgentOptions) (*Report, error) { return nil, ErrNoCgo }
