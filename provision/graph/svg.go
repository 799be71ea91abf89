package graph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// ErrNoDot is returned by RenderSVG when Graphviz's dot is not installed.
var ErrNoDot = errors.New("-format svg needs Graphviz's dot program, which is not on PATH: install the graphviz package (apt-get install graphviz, dnf install graphviz, brew install graphviz), or write -format dot and render it elsewhere")

// RenderSVG renders DOT source to SVG with Graphviz's own dot program.
// gpuform calls dot rather than link a Graphviz binding: the maintained Go
// binding (goccy/go-graphviz) embeds Graphviz compiled to WebAssembly, a
// large dependency for one output format, and dot is packaged everywhere.
func RenderSVG(ctx context.Context, dot []byte) ([]byte, error) {
	path, err := exec.LookPath("dot")
	if err != nil {
		return nil, ErrNoDot
	}
	cmd := exec.CommandContext(ctx, path, "-Tsvg")
	cmd.Stdin = bytes.NewReader(dot)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("dot -Tsvg: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}
