package main

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/internal/jsonformat"
)

func newVersionCommand(s Streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print gpuform's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]string{
					"format_version":  jsonformat.Version,
					"gpuform_version": Version,
					"go_version":      runtime.Version(),
					"platform":        runtime.GOOS + "_" + runtime.GOARCH,
				})
			}
			fmt.Fprintf(s.Out, "gpuform v%s\non %s_%s (%s)\n", Version, runtime.GOOS, runtime.GOARCH, runtime.Version())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version as JSON")
	return cmd
}
