package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/provision/plan"
)

// showArguments are the arguments of gpuform show.
type showArguments struct {
	// Path is the plan file.
	Path string
	// ViewType is -json's.
	ViewType viewType

	json bool
}

func (a *showArguments) register(fs *pflag.FlagSet) {
	fs.BoolVar(&a.json, "json", false, "print the saved plan as JSON (the document of gpuform plan -json)")
}

// finish takes the plan file, the one argument.
func (a *showArguments) finish(_ *pflag.FlagSet, args []string) error {
	a.ViewType = viewTypeOf(a.json)
	if err := showArgCount(args); err != nil {
		return err
	}
	a.Path = args[0]
	return nil
}

// showArgs is cobra's argument check for show.
func showArgs(_ *cobra.Command, args []string) error {
	return showArgCount(args)
}

// showArgCount refuses anything but one plan file.
func showArgCount(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("show takes one argument, the plan file saved by gpuform plan -out (got %d)", len(args))
	}
	return nil
}

// parseShowArguments parses gpuform show's command line (after "show").
func parseShowArguments(args []string) (*showArguments, error) {
	a := &showArguments{}
	return a, parseArguments(args, a.register, showArgs, a.finish)
}

func newShowCommand(s Streams) *cobra.Command {
	a := &showArguments{}
	cmd := &cobra.Command{
		Use:   "show [-json] PLANFILE",
		Short: "Show a plan saved by gpuform plan -out",
		Long: `Show prints a plan saved by "gpuform plan -out FILE" the way plan printed it,
or with -json as the document "gpuform plan -json" prints, without reaching
any host: what is shown is what "gpuform apply FILE" would run, as it was
when the plan was made (apply refuses the file if a host changed since).

Exit status: 0 success; 1 the file cannot be read, is not a gpuform plan
file, or was written in a format version this gpuform does not read.`,
		Args: showArgs,
		RunE: jsonErrors(s, func() bool { return a.ViewType == viewJSON }, func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			p, err := runShow(a)
			if err != nil {
				return err
			}
			// The saved plan renders through plan's own views.
			return newPlanView(a.ViewType, s).Plan(p, "")
		}),
	}
	a.register(cmd.Flags())
	return cmd
}

// runShow is gpuform show's work: it reads the plan file, reaching no
// host, and returns the plan it holds.
func runShow(a *showArguments) (*plan.Plan, error) {
	if fi, err := os.Stat(a.Path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory: show reads a plan file saved by gpuform plan -out", a.Path)
	}
	f, err := plan.ReadFile(a.Path)
	if errors.Is(err, plan.ErrNotPlanFile) {
		return nil, fmt.Errorf("%s: %w (save one with gpuform plan -out FILE)", a.Path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.Path, err)
	}
	return f.Plan, nil
}
