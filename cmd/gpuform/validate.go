package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/diagview"
)

func newValidateCommand(s Streams) *cobra.Command {
	var flags specFlags
	var asJSON bool
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
			cfg, diags := flags.load(s, dirArg(args))
			if asJSON {
				if err := diagview.WriteJSON(s.Out, diags, nil, cfg.Files); err != nil {
					return err
				}
			} else {
				if err := diagview.WriteText(s.Err, diags, nil, cfg.Files, diagview.TextOptions{Color: s.Color(s.Err)}); err != nil {
					return err
				}
				if !diags.HasErrors() {
					fmt.Fprintf(s.Out, "Success! The spec is valid (%d node%s).\n", len(cfg.Nodes), plural(len(cfg.Nodes)))
				}
			}
			if diags.HasErrors() {
				return exitError{ExitFailed}
			}
			return nil
		},
	}
	flags.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print diagnostics as JSON (terraform validate -json shape)")
	return cmd
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
