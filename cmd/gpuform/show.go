package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/provision/plan"
)

func newShowCommand(s Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [-json] PLANFILE",
		Short: "Show a plan saved by gpuform plan -out",
		Long: `Show prints a plan saved by "gpuform plan -out FILE" the way plan printed it,
or with -json as the document "gpuform plan -json" prints, without reaching
any host: what is shown is what "gpuform apply FILE" would run, as it was
when the plan was made (apply refuses the file if a host changed since).

Exit status: 0 success; 1 the file cannot be read, is not a gpuform plan
file, or was written in a format version this gpuform does not read.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("show takes one argument, the plan file saved by gpuform plan -out (got %d)", len(args))
			}
			return nil
		},
		RunE: jsonErrors(s, func() bool { return asJSON }, func(cmd *cobra.Command, args []string) error {
			path := args[0]
			if fi, err := os.Stat(path); err == nil && fi.IsDir() {
				return fmt.Errorf("%s is a directory: show reads a plan file saved by gpuform plan -out", path)
			}
			f, err := plan.ReadFile(path)
			if errors.Is(err, plan.ErrNotPlanFile) {
				return fmt.Errorf("%s: %w (save one with gpuform plan -out FILE)", path, err)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if asJSON {
				return plan.RenderJSON(s.Out, f.Plan)
			}
			return plan.RenderText(s.Out, f.Plan, plan.RenderOptions{Color: s.Color(s.Out)})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the saved plan as JSON (the document of gpuform plan -json)")
	return cmd
}
