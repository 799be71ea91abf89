package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/diagview"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// varFlag is a pflag.Value that appends -var and -var-file to one shared,
// ordered list, because Terraform applies them in command-line order, later
// ones winning.
type varFlag struct {
	list *[]spec.VarArg
	file bool
}

func (f varFlag) String() string { return "" }
func (f varFlag) Type() string {
	if f.file {
		return "file"
	}
	return "name=value"
}
func (f varFlag) Set(v string) error {
	*f.list = append(*f.list, spec.VarArg{File: f.file, Value: v})
	return nil
}

// specFlags are the flags every command that reads a spec takes.
type specFlags struct {
	vars []spec.VarArg
	// takeOver are the -take-over resources (plan and apply).
	takeOver []string
}

func (f *specFlags) register(fs *pflag.FlagSet) {
	fs.Var(varFlag{list: &f.vars}, "var", "set a variable: -var NAME=VALUE (repeatable)")
	fs.Var(varFlag{list: &f.vars, file: true}, "var-file", "read variable values from a *.gpuvars.hcl file (repeatable)")
}

// load reads the spec in dir with the flags' variables, the environment's
// GPUFORM_VAR_ values and the built-in modules.
func (f *specFlags) load(s Streams, dir string) (*spec.Config, hcl.Diagnostics) {
	defer s.interrupts.ungraceful()()
	k, err := s.KB()
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Knowledge base", Detail: err.Error()}}
	}
	return f.loadWith(s, dir, k.GPUModelTable())
}

// loadModelsOnly is load for a command that reads nothing else of the
// knowledge base (facts): only its GPU model tables are parsed.
func (f *specFlags) loadModelsOnly(s Streams, dir string) (*spec.Config, hcl.Diagnostics) {
	defer s.interrupts.ungraceful()()
	models, err := kb.LoadGPUModelTable()
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Knowledge base",
			Detail: fmt.Sprintf("gpuform's embedded knowledge base does not parse (a bug in this build): %v", err)}}
	}
	return f.loadWith(s, dir, models)
}

func (f *specFlags) loadWith(s Streams, dir string, models *spec.GPUModelTable) (*spec.Config, hcl.Diagnostics) {
	return spec.Load(dir, spec.LoadOptions{
		VarArgs:        f.vars,
		Environ:        s.Environ,
		BuiltinModules: modules.FS(),
		BinaryVersion:  Version,
		Origin:         specOrigin(s, dir, f.takeOver),
		GPUModels:      models,
	})
}

// dirArg returns the spec directory argument, "." when omitted.
func dirArg(args []string) string {
	if len(args) == 0 {
		return "."
	}
	return args[0]
}

// maxOneDir is cobra's argument check for commands taking an optional DIR.
var maxOneDir = cobra.MaximumNArgs(1)

// writeDiags prints diagnostics to stderr in the human format.
func writeDiags(s Streams, diags hcl.Diagnostics, cfg *spec.Config) {
	files := map[string]*hcl.File{}
	if cfg != nil {
		files = cfg.Files
	}
	_ = diagview.WriteText(s.Err, diags, nil, files, diagview.TextOptions{Color: s.Color(s.Err)})
}

// loadPinned loads the spec and puts the lock file's releases in place of
// its floating versions, for the commands that act on hosts (plan, apply,
// verify). lint and validate look at the spec as written.
func (f *specFlags) loadPinned(s Streams, dir string) (*spec.Config, hcl.Diagnostics) {
	cfg, diags := f.load(s, dir)
	lock, lf, d := spec.LoadLockFile(filepath.Join(dir, spec.LockFileName))
	diags = append(diags, d...)
	if lf != nil {
		cfg.Files[lf.Body.MissingItemRange().Filename] = lf
	}
	if !diags.HasErrors() {
		diags = append(diags, spec.ApplyLock(cfg, lock)...)
	}
	return cfg, diags
}

// failJSON writes what stopped the command as one diagnostics JSON
// document (the validate -json shape) on standard output and returns exit
// status 1: a pipeline that asked for JSON parses a document whether or
// not gpuform could do its job, instead of finding stdout empty.
func failJSON(s Streams, diags hcl.Diagnostics, cfg *spec.Config, err error) error {
	if err != nil {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: err.Error()})
	}
	files := map[string]*hcl.File{}
	if cfg != nil {
		files = cfg.Files
	}
	if werr := diagview.WriteJSON(s.Out, diags, nil, files); werr != nil {
		return werr
	}
	return exitError{ExitFailed}
}

// reportLoad prints the diagnostics of loading a spec — as the JSON
// document on stdout when asJSON and the spec did not load, otherwise in
// text on stderr — and returns the exit error when the spec did not load.
func reportLoad(s Streams, diags hcl.Diagnostics, cfg *spec.Config, asJSON bool) error {
	if diags.HasErrors() && asJSON {
		return failJSON(s, diags, cfg, nil)
	}
	if len(diags) > 0 {
		writeDiags(s, diags, cfg)
	}
	if diags.HasErrors() {
		return exitError{ExitFailed}
	}
	return nil
}

// jsonErrors wraps a command's RunE so that an error it returns (a bad
// flag value, an unknown -target) becomes the JSON document when asJSON
// reports that JSON was asked for on standard output.
func jsonErrors(s Streams, asJSON func() bool, run func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args)
		var ee exitError
		if err == nil || errors.As(err, &ee) || !asJSON() {
			return err
		}
		return failJSON(s, nil, nil, err)
	}
}
