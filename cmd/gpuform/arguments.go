package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The arguments layer, after Terraform's internal/command/arguments: each
// command's flags and positional arguments are parsed into one typed
// struct, which is all its work function receives. Cobra stays the
// command tree and parses the flags (register binds them to the struct's
// fields); finish then checks what the flags alone can tell and fills in
// the derived fields. parse*Arguments does both without cobra, for the
// table-driven tests of parsing (arguments_test.go). verify's arguments
// are in verify.go.
//
// Checks that need the file system, the spec or the hosts are the work's:
// they keep their place in the order a command has always reported
// errors in.

// viewType is how a command renders its result: Terraform's look for
// people, or the versioned JSON document for programs.
type viewType int

const (
	viewHuman viewType = iota
	viewJSON
)

// viewTypeOf is the view a -json flag asks for.
func viewTypeOf(asJSON bool) viewType {
	if asJSON {
		return viewJSON
	}
	return viewHuman
}

// planArguments are the arguments of gpuform plan.
type planArguments struct {
	// Dir is the spec directory, "." when omitted.
	Dir string
	// Spec are -var, -var-file and -take-over.
	Spec specFlags
	// Conn are the connection flags and -probe-timeout.
	Conn connectFlags
	// Targets are the -target hosts; none means every host.
	Targets []string
	// OutPath is -out: where the plan is saved, "" for nowhere.
	OutPath string
	// DetailedExitCode is -detailed-exitcode: exit 2 when there are
	// changes.
	DetailedExitCode bool
	// ViewType is -json's.
	ViewType viewType
	// Bundle is -bundle: plan against an offline bundle's packages
	// instead of the hosts' repositories.
	Bundle string

	json bool
}

func (a *planArguments) register(fs *pflag.FlagSet) {
	fs.StringVar(&a.Bundle, "bundle", "", "plan against the offline bundle BUNDLE (a directory or .tar/.tar.gz gpuform bundle wrote): the releases come from it, not from the hosts' repositories, and its images are loaded, not pulled")
	a.Spec.register(fs)
	a.Spec.registerTakeOver(fs)
	a.Conn.register(fs)
	a.Conn.timeouts.registerProbe(fs)
	fs.StringArrayVar(&a.Targets, "target", nil, "only these hosts (repeatable; ranges allowed: gpu[001-004])")
	fs.StringVar(&a.OutPath, "out", "", "save the plan to FILE for gpuform apply FILE")
	fs.BoolVar(&a.json, "json", false, "print the plan as JSON")
	fs.BoolVar(&a.DetailedExitCode, "detailed-exitcode", false, "exit 2 when there are changes")
}

// finish takes the positional arguments once the flags are parsed.
func (a *planArguments) finish(_ *pflag.FlagSet, args []string) error {
	a.Dir = dirArg(args)
	a.ViewType = viewTypeOf(a.json)
	return nil
}

// parsePlanArguments parses gpuform plan's command line (after "plan").
func parsePlanArguments(args []string) (*planArguments, error) {
	a := &planArguments{}
	return a, parseArguments(args, a.register, maxOneDir, a.finish)
}

// applyArguments are the arguments of gpuform apply.
type applyArguments struct {
	// Dir is the spec directory or the saved plan file, "." when omitted.
	Dir string
	// Bundle is -bundle: install from an offline bundle.
	Bundle string
	// Spec are -var, -var-file and -take-over.
	Spec specFlags
	// Conn are the connection flags, -probe-timeout and -step-timeout.
	Conn connectFlags
	// Targets are the -target hosts; none means every host.
	Targets []string
	// AutoApprove is -auto-approve: no confirmation asked.
	AutoApprove bool
	// Verbose is -verbose: every step's line, also on a terminal.
	Verbose bool
	// LockTimeout is -lock-timeout: how long to wait for a host locked by
	// another apply; 0 fails at once.
	LockTimeout time.Duration
	// ViewType is -json's.
	ViewType viewType

	json bool
}

func (a *applyArguments) register(fs *pflag.FlagSet) {
	fs.StringVar(&a.Bundle, "bundle", "", "install from the offline bundle BUNDLE (a directory or .tar/.tar.gz gpuform bundle wrote), copied to each host, with the host's own sources unused and its images loaded by digest, none pulled")
	a.Spec.register(fs)
	a.Spec.registerTakeOver(fs)
	a.Conn.register(fs)
	a.Conn.timeouts.registerProbe(fs)
	a.Conn.timeouts.registerStep(fs)
	fs.StringArrayVar(&a.Targets, "target", nil, "only these hosts (repeatable; ranges allowed: gpu[001-004])")
	fs.DurationVar(&a.LockTimeout, "lock-timeout", 0, "wait this long (e.g. 5m) for a host locked by another apply; 0s fails at once")
	fs.BoolVar(&a.AutoApprove, "auto-approve", false, "apply without asking for confirmation")
	fs.BoolVar(&a.Verbose, "verbose", false, "print every step of every host, also on a terminal (where one progress line replaces them)")
	fs.BoolVar(&a.json, "json", false, "print the apply report as JSON (implies no prompt: combine with -auto-approve or a plan file)")
}

// finish checks -lock-timeout and takes the positional arguments.
func (a *applyArguments) finish(_ *pflag.FlagSet, args []string) error {
	a.ViewType = viewTypeOf(a.json)
	if a.LockTimeout < 0 {
		return fmt.Errorf("-lock-timeout %s: a duration of 0s or more is required", a.LockTimeout)
	}
	a.Dir = dirArg(args)
	return nil
}

// parseApplyArguments parses gpuform apply's command line (after "apply").
func parseApplyArguments(args []string) (*applyArguments, error) {
	a := &applyArguments{}
	return a, parseArguments(args, a.register, maxOneDir, a.finish)
}

// parseArguments parses a command line the way Run and cobra do
// (normalizeArgs, pflag, then the command's positional check, cobra's
// Args) into the flags register binds, and hands the positional arguments
// to finish. It is the parse path of the arguments tests; cobra's own
// parse and its flag errors are what the CLI tests cover.
func parseArguments(args []string, register func(*pflag.FlagSet), positional cobra.PositionalArgs, finish func(*pflag.FlagSet, []string) error) error {
	fs := pflag.NewFlagSet("gpuform", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	register(fs)
	if err := fs.Parse(normalizeArgs(args)); err != nil {
		return err
	}
	if err := positional(nil, fs.Args()); err != nil {
		return err
	}
	return finish(fs, fs.Args())
}
