//go:build !cgo

package nvmlfacts

import (
	"context"
	"io"
)

// RunAgent always fails with ErrNoCgo in a build without cgo.
func RunAgent(ctx context.Context, w io.Writer, opts AgentOptions) error { return ErrNoCgo }

// CollectAgent always fails with ErrNoCgo in a build without cgo.
func CollectAgent(ctx context.Context, opts AgentOptions) (*Report, error) { return nil, ErrNoCgo }
