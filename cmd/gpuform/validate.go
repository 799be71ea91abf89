package main

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/diagview"
	"github.com/gpuform/gpuform/spec"
)

// validateArguments are the arguments of gpuform validate.
type validateArguments struct {
	// Dir is the spec directory, "." when omitted.
	Dir string
	// Spec are -var and -var-file.
	Spec specFlags
	// ViewType is -json's.
	ViewType viewType

	json bool
}

func (a *validateArguments) register(fs *pflag.FlagSet) {
	a.Spec.register(fs)
	fs.BoolVar(&a.json, "json", false, "print diagnostics as JSON (terraform validate -json shape)")
}

func (a *validateArguments) finish(_ *pflag.FlagSet, args []string) error {
	a.Dir = dirArg(args)
	a.ViewType = viewTypeOf(a.json)
	return nil
}

// parseValidateArguments parses gpuform validate's command line (after
// "validate").
func parseValidateArguments(args []string) (*validateArguments, error) {
	a := &validateArguments{}
	return a, parseArguments(args, a.register, maxOneDir, a.finish)
}

func newValidateCommand(s Streams) *cobra.Command {
	a := &validateArguments{}
	cmd := &cobra.Command{
		Use:   "validate [DIR]",
		Short: "Check that a spec is well-formed: syntax, types, references, values",
		Long: `Validate loads the spec in DIR (default: the current directory) and reports
every syntax error, unknown attribute, wrong type, bad reference and invalid
value, each pointing at its line and column. It does not judge whether the
versions or topology make sense; that is what "gpuform lint" is for.

Exit status: 0 valid, 1 invalid.`,
		Args: maxOneDir,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			// The work is loading the spec; its model, the spec and its
			// diagnostics, is what the view renders.
			cfg, diags := a.Spec.load(s, a.Dir)
			if err := newValidateView(a.ViewType, s).Validated(cfg, diags); err != nil {
				return err
			}
			if diags.HasErrors() {
				return exitError{ExitFailed}
			}
			return nil
		},
	}
	a.register(cmd.Flags())
	return cmd
}

// validateView renders what validate found.
type validateView interface {
	Validated(cfg *spec.Config, diags hcl.Diagnostics) error
}

func newValidateView(t viewType, s Streams) validateView {
	if t == viewJSON {
		return validateJSON{s}
	}
	return validateHuman{s}
}

// validateHuman writes the diagnostics on standard error, and the success
// line on standard output.
type validateHuman struct{ s Streams }

func (v validateHuman) Validated(cfg *spec.Config, diags hcl.Diagnostics) error {
	if err := diagview.WriteText(v.s.Err, diags, nil, cfg.Files, diagview.TextOptions{Color: v.s.Color(v.s.Err)}); err != nil {
		return err
	}
	if !diags.HasErrors() {
		fmt.Fprintf(v.s.Out, "Success! The spec is valid (%d node%s).\n", len(cfg.Nodes), plural(len(cfg.Nodes)))
	}
	return nil
}

// validateJSON writes the terraform validate -json document.
type validateJSON struct{ s Streams }

func (v validateJSON) Validated(cfg *spec.Config, diags hcl.Diagnostics) error {
	return diagview.WriteJSON(v.s.Out, diags, nil, cfg.Files)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
