package main

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/internal/jsonformat"
)

// versionArguments are the arguments of gpuform version.
type versionArguments struct {
	// ViewType is -json's.
	ViewType viewType

	json bool
}

func (a *versionArguments) register(fs *pflag.FlagSet) {
	fs.BoolVar(&a.json, "json", false, "print the version as JSON")
}

// finish picks the view.
func (a *versionArguments) finish(_ *pflag.FlagSet, _ []string) error {
	a.ViewType = viewTypeOf(a.json)
	return nil
}

// parseVersionArguments parses gpuform version's command line (after
// "version").
func parseVersionArguments(args []string) (*versionArguments, error) {
	a := &versionArguments{}
	return a, parseArguments(args, a.register, versionNoArgs, a.finish)
}

// versionNoArgs is cobra.NoArgs for the parse path, which has no command:
// cobra's error names the command's path, "gpuform version".
func versionNoArgs(_ *cobra.Command, args []string) error {
	root, cmd := &cobra.Command{Use: "gpuform"}, &cobra.Command{Use: "version"}
	root.AddCommand(cmd)
	return cobra.NoArgs(cmd, args)
}

func newVersionCommand(s Streams) *cobra.Command {
	a := &versionArguments{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print gpuform's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			m, err := runVersion(s)
			if err != nil {
				return err
			}
			return newVersionView(a.ViewType, s).Version(m)
		},
	}
	a.register(cmd.Flags())
	return cmd
}

// versionModel is what gpuform version says: this build and how current
// its knowledge base is.
type versionModel struct {
	GPUForm  string
	Go       string
	Platform string
	// KBNewestDate and KBNewest are the newest release the knowledge base
	// knows, KBRefreshDate the day its tables were last checked against
	// their sources; "" when it says none.
	KBNewestDate  string
	KBNewest      string
	KBRefreshDate string
}

// runVersion is gpuform version's work. Two dates tell a user how current
// the embedded knowledge base is (docs/knowledge-base.md): the day its
// tables were last checked against their sources, and the newest release
// they know.
func runVersion(s Streams) (*versionModel, error) {
	k, err := s.KB()
	if err != nil {
		return nil, err
	}
	m := &versionModel{GPUForm: Version, Go: runtime.Version(), Platform: runtime.GOOS + "_" + runtime.GOARCH}
	if d, ok := k.NewestFact(); ok {
		m.KBNewestDate, m.KBNewest = d.String(), d.What
	}
	if d, ok := k.RefreshDate(); ok {
		m.KBRefreshDate = d.String()
	}
	return m, nil
}

// versionView renders gpuform version's model.
type versionView interface {
	Version(m *versionModel) error
}

func newVersionView(t viewType, s Streams) versionView {
	if t == viewJSON {
		return versionJSON{s}
	}
	return versionHuman{s}
}

type versionHuman struct{ s Streams }

func (v versionHuman) Version(m *versionModel) error {
	fmt.Fprintf(v.s.Out, "gpuform v%s\non %s (%s)\n", m.GPUForm, m.Platform, m.Go)
	if m.KBRefreshDate != "" {
		fmt.Fprintf(v.s.Out, "knowledge base: refreshed %s (tables checked against their sources)\n", m.KBRefreshDate)
	}
	if m.KBNewestDate != "" {
		fmt.Fprintf(v.s.Out, "knowledge base: newest fact %s, %s\n", m.KBNewestDate, m.KBNewest)
	}
	return nil
}

type versionJSON struct{ s Streams }

// Version writes the document; knowledge_base_date stays the newest
// release's date, as before.
func (v versionJSON) Version(m *versionModel) error {
	enc := json.NewEncoder(v.s.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]string{
		"format_version":              jsonformat.Version,
		"gpuform_version":             m.GPUForm,
		"go_version":                  m.Go,
		"platform":                    m.Platform,
		"knowledge_base_date":         m.KBNewestDate,
		"knowledge_base_newest":       m.KBNewest,
		"knowledge_base_refresh_date": m.KBRefreshDate,
	})
}
