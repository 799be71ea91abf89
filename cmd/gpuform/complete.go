package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/diagview"
	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/spec"
)

// completeValues offers a flag's fixed values to shell completion (-tier,
// -format), so `gpuform verify -tier <TAB>` lists the tiers.
func completeValues(cmd *cobra.Command, flag string, values ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// completeTargets offers the spec's hosts for -target on every command that
// has it. The spec is the one the command would read (DIR, or the working
// directory) with the -var and -var-file flags already given; when it does
// not load, nothing is offered rather than an error in the middle of the
// command line.
func completeTargets(s Streams, root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("target") != nil {
			_ = c.RegisterFlagCompletionFunc("target", func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return specHosts(s, cmd, dirArg(args), toComplete), cobra.ShellCompDirectiveNoFileComp
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// specHosts lists the host names of the spec in dir that start with prefix.
func specHosts(s Streams, cmd *cobra.Command, dir, prefix string) []cobra.Completion {
	var vars []spec.VarArg
	if f := cmd.Flags().Lookup("var"); f != nil {
		if v, ok := f.Value.(varFlag); ok {
			vars = *v.list
		}
	}
	cfg, diags := spec.Load(dir, spec.LoadOptions{VarArgs: vars, Environ: s.Environ, BuiltinModules: modules.FS(), BinaryVersion: Version})
	if diags.HasErrors() || cfg == nil {
		return nil
	}
	hosts, diags := target.Select(cfg, nil)
	if diags.HasErrors() {
		return nil
	}
	var out []cobra.Completion
	for _, h := range hosts {
		if strings.HasPrefix(h.Host.Name, prefix) {
			out = append(out, h.Host.Name)
		}
	}
	return out
}

// formatNames are lint's -format values.
func formatNames() []string {
	out := make([]string, len(diagview.Formats))
	for i, f := range diagview.Formats {
		out[i] = string(f)
	}
	return out
}

// tierNames are verify's -tier values.
func tierNames() []string {
	var out []string
	for _, t := range verify.Tiers() {
		out = append(out, string(t))
	}
	return out
}
