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

// exactParts is how many dot-separated parts make a component's version a
// single release: driver releases have two or three (570.26, 550.127.08).
func exactParts(c spec.Component) int {
	if c == spec.ComponentDriver {
		return 2
	}
	return 3
}

func checkVersionPinned(ctx *Context) {
	for _, n := range ctx.Nodes() {
		versions := spec.NodeVersions(n)
		for _, c := range spec.Components() {
			v, ok := versions[c]
			if !ok || v.V.IsZero() || len(v.V.Parts) >= exactParts(c) {
				continue
			}
			if _, ok := ctx.Pinned(n.Name, c); ok {
				continue
			}
			ctx.Report(v.Range,
				fmt.Sprintf("%s: %s version %q is not an exact release", nodeRef(n), c, v.V.Raw),
				fmt.Sprintf("%q floats: each host resolves it to whatever the repository offers on the day it is applied, so hosts that were meant to be identical drift apart and a re-apply can upgrade a running fleet. Pin the exact release, or run `gpuform lock` and commit .gpuform.lock.hcl so the lock file records it.", v.V.Raw))
		}
	}
}
