package lint

import (
	"fmt"

	"github.com/gpuform/gpuform/spec"
)

// versionNotPinnedRule declares version_not_pinned.
func versionNotPinnedRule() Rule {
	return Rule{
		Name:     "version_not_pinned",
		Severity: Warning,
		Summary:  "A version floats (a branch such as \"550\") and the lock file does not pin it.",
		Check:    checkVersionPinned,
	}
}

// pinnedComponent is one versioned component of a node with the number of
// dot-separated parts that makes its version a single release.
type pinnedComponent struct {
	name    string
	version spec.Attr[spec.Version]
	exactAt int
}

func nodeComponents(n *spec.Node) []pinnedComponent {
	var out []pinnedComponent
	if n.Driver != nil {
		// Driver releases have two or three parts (570.26, 550.127.08).
		out = append(out, pinnedComponent{"driver", n.Driver.Version, 2})
	}
	for _, c := range []struct {
		name string
		c    *spec.Component
	}{{"cuda", n.CUDA}, {"nccl", n.NCCL}, {"dcgm", n.DCGM}} {
		if c.c != nil {
			out = append(out, pinnedComponent{c.name, c.c.Version, 3})
		}
	}
	if n.Container != nil {
		out = append(out, pinnedComponent{"nvidia_container_toolkit", n.Container.NvidiaContainerToolkit, 3})
	}
	return out
}

func checkVersionPinned(ctx *Context) {
	for _, n := range ctx.Nodes() {
		for _, c := range nodeComponents(n) {
			v := c.version
			if !v.Set || v.V.IsZero() || len(v.V.Parts) >= c.exactAt {
				continue
			}
			if _, ok := ctx.Pinned(n.Name, c.name); ok {
				continue
			}
			ctx.Report(v.Range,
				fmt.Sprintf("%s: %s version %q is not an exact release", nodeRef(n), c.name, v.V.Raw),
				fmt.Sprintf("%q floats: each host resolves it to whatever the repository offers on the day it is applied, so hosts that were meant to be identical drift apart and a re-apply can upgrade a running fleet. Pin the exact release, or run `gpuform lock` and commit .gpuform.lock.hcl so the lock file records it.", v.V.Raw))
		}
	}
}
