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
			// Two dates tell a user how current the embedded knowledge
			// base is (docs/knowledge-base.md): the day its tables were
			// last checked against their sources, and the newest release
			// they know. knowledge_base_date stays the newest release's
			// date, as before.
			k, err := s.KB()
			if err != nil {
				return err
			}
			kbDate, kbWhat, kbRefreshed := "", "", ""
			if d, ok := k.NewestFact(); ok {
				kbDate, kbWhat = d.String(), d.What
			}
			if d, ok := k.RefreshDate(); ok {
				kbRefreshed = d.String()
			}
			if asJSON {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]string{
					"format_version":              jsonformat.Version,
					"gpuform_version":             Version,
					"go_version":                  runtime.Version(),
					"platform":                    runtime.GOOS + "_" + runtime.GOARCH,
					"knowledge_base_date":         kbDate,
					"knowledge_base_newest":       kbWhat,
					"knowledge_base_refresh_date": kbRefreshed,
				})
			}
			fmt.Fprintf(s.Out, "gpuform v%s\non %s_%s (%s)\n", Version, runtime.GOOS, runtime.GOARCH, runtime.Version())
			if kbRefreshed != "" {
				fmt.Fprintf(s.Out, "knowledge base: refreshed %s (tables checked against their sources)\n", kbRefreshed)
			}
			if kbDate != "" {
				fmt.Fprintf(s.Out, "knowledge base: newest fact %s, %s\n", kbDate, kbWhat)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version as JSON")
	return cmd
}
