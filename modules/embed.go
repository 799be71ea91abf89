// Package modules holds gpuform's built-in HCL modules (hardware profiles and
// stack baselines), embedded into the binary so that a spec can use
// source = "gpuform/NAME" with no download. It contains data only; the spec
// package loads it.
package modules

import (
	"embed"
	"io/fs"
)

//go:embed */*.gpuform.hcl
var files embed.FS

// FS returns the built-in modules: one top-level directory per module.
func FS() fs.FS { return files }
