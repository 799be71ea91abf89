package spec

import "io/fs"

// LoadOptions tells Load where variable values and built-in modules come from.
type LoadOptions struct {
	// Vars are -var NAME=VALUE arguments in command-line order.
	Vars []string
	// VarFiles are -var-file paths in command-line order.
	VarFiles []string
	// Environ is the process environment (GPUFORM_VAR_name values); nil means none.
	Environ []string
	// BuiltinModules resolves "gpuform/NAME" sources; nil disables them.
	BuiltinModules BuiltinModules
	// BinaryVersion is checked against required_version; empty skips the check.
	BinaryVersion string
}

// BuiltinModules gives access to modules shipped inside the binary; it is an
// fs.FS whose top-level directories are module names.
type BuiltinModules = fs.FS
