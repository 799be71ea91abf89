package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/diagview"
	"github.com/gpuform/gpuform/lint"
	"github.com/gpuform/gpuform/spec"
)

func newLintCommand(s Streams) *cobra.Command {
	var flags specFlags
	var outFormat, minSeverity, configPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "lint [DIR]",
		Short: "Find mistakes that make a GPU node slow or broken, before anything is touched",
		Long: `Lint loads the spec in DIR and checks it against gpuform's rules: driver and
CUDA compatibility from NVIDIA's tables, fabric manager and NVSwitch, container
shm and ulimits, NUMA binding and GPU-to-NIC affinity, verification floors and
version pinning. Every rule is documented in docs/rules.md.

Silence a finding with a comment on its line or the line above:
  # gpuform-ignore: rule_name -- reason
Disable or re-grade rules in a lint block or in DIR/.gpuform-lint.hcl.

Exit status: 0 clean; 1 the spec is invalid; 2 findings at or above
--min-severity (default error).`,
		Args: maxOneDir,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := dirArg(args)
			if err := jsonAlias(cmd, asJSON, &outFormat); err != nil {
				return err
			}
			outF, err := diagview.ParseFormat(outFormat)
			if err != nil {
				return fmt.Errorf("-format: %w", err)
			}
			min, ok := lint.ParseSeverity(minSeverity)
			if !ok {
				return fmt.Errorf("--min-severity must be error, warning or info, not %q", minSeverity)
			}
			cfg, diags := flags.load(s, dir)
			k, err := s.KB()
			if err != nil {
				return err
			}
			opts := lint.Options{MinSeverity: min, KB: k}
			if configPath == "" {
				if _, err := os.Stat(filepath.Join(dir, spec.LintConfigFile)); err == nil {
					configPath = filepath.Join(dir, spec.LintConfigFile)
				}
			} else if _, err := os.Stat(configPath); errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("lint configuration %s does not exist", configPath)
			}
			if configPath != "" {
				lc, f, d := spec.LoadLintFile(configPath)
				diags = append(diags, d...)
				if f != nil {
					cfg.Files[configPath] = f
				}
				opts.Config = lc
			}
			lock, lf, d := spec.LoadLockFile(filepath.Join(dir, spec.LockFileName))
			diags = append(diags, d...)
			if lf != nil {
				cfg.Files[lf.Body.MissingItemRange().Filename] = lf
			}
			opts.Pins = lintPins(lock)
			res, d := lint.Run(cfg, opts)
			diags = append(diags, d...)
			if err := writeLint(s, outF, dir, diags, res, cfg.Files); err != nil {
				return err
			}
			if code := lint.ExitCode(res, diags); code != ExitOK {
				return exitError{code}
			}
			return nil
		},
	}
	flags.register(cmd.Flags())
	cmd.Flags().StringVar(&outFormat, "format", "text", "output format: text, compact, json or sarif")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print findings as JSON (the same as -format json)")
	cmd.Flags().StringVar(&minSeverity, "min-severity", "error", "lowest severity that makes the exit status 2: error, warning or info")
	completeValues(cmd, "format", formatNames()...)
	completeValues(cmd, "min-severity", "error", "warning", "info")
	cmd.Flags().StringVar(&configPath, "config", "", "lint configuration file (default DIR/"+spec.LintConfigFile+" when present)")
	return cmd
}

func writeLint(s Streams, f diagview.Format, dir string, diags hcl.Diagnostics, res lint.Result, files map[string]*hcl.File) error {
	err := diagview.Write(s.Out, f, diagview.Input{
		Diags:    diags,
		Findings: res.Findings,
		Files:    files,
		Text:     diagview.TextOptions{Color: s.Color(s.Out)},
		SARIF:    diagview.SARIFOptions{BaseDir: dir, ToolVersion: Version, Rules: lint.Catalogue()},
	})
	if err != nil || f != diagview.Text {
		return err
	}
	if len(diags) == 0 && len(res.Findings) == 0 {
		fmt.Fprintln(s.Out, "No problems found.")
		return nil
	}
	errs := res.Count(lint.Error) + errorCount(diags)
	fmt.Fprintf(s.Out, "%d error%s, %d warning%s, %d info", errs, plural(errs), res.Count(lint.Warning), plural(res.Count(lint.Warning)), res.Count(lint.Info))
	if n := len(res.Suppressed); n > 0 {
		fmt.Fprintf(s.Out, " (%d suppressed)", n)
	}
	fmt.Fprintln(s.Out, ".")
	return nil
}

func errorCount(diags hcl.Diagnostics) int {
	n := 0
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			n++
		}
	}
	return n
}

// lintPins turns a lock file into the pins lint checks floating versions
// against.
func lintPins(l *spec.Lock) lint.Pins {
	if l == nil {
		return nil
	}
	pins := lint.Pins{}
	for node, comps := range l.Nodes {
		for comp, v := range comps {
			pins[lint.PinKey{Node: node, Component: comp}] = v.V.Raw
		}
	}
	return pins
}
