package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/diagview"
	"github.com/gpuform/gpuform/lint"
	"github.com/gpuform/gpuform/spec"
)

// lintArguments are the arguments of gpuform lint.
type lintArguments struct {
	// Dir is the spec directory, "." when omitted.
	Dir string
	// Spec are -var and -var-file.
	Spec specFlags
	// Format is -format's (text, compact, json, sarif); -json sets json.
	Format diagview.Format
	// MinSeverity is --min-severity: the lowest severity that makes the
	// exit status 2.
	MinSeverity lint.Severity
	// ConfigPath is --config, "" for DIR/.gpuform-lint.hcl when present.
	ConfigPath string

	format, minSeverity string
	json                bool
}

func (a *lintArguments) register(fs *pflag.FlagSet) {
	a.Spec.register(fs)
	fs.StringVar(&a.format, "format", "text", "output format: text, compact, json or sarif")
	fs.BoolVar(&a.json, "json", false, "print findings as JSON (the same as -format json)")
	fs.StringVar(&a.minSeverity, "min-severity", "error", "lowest severity that makes the exit status 2: error, warning or info")
	fs.StringVar(&a.ConfigPath, "config", "", "lint configuration file (default DIR/"+spec.LintConfigFile+" when present)")
}

// finish parses -format and --min-severity, in the order lint has always
// reported them.
func (a *lintArguments) finish(fs *pflag.FlagSet, args []string) error {
	a.Dir = dirArg(args)
	if err := jsonAliasOf(fs, a.json, &a.format); err != nil {
		return err
	}
	f, err := diagview.ParseFormat(a.format)
	if err != nil {
		return fmt.Errorf("-format: %w", err)
	}
	a.Format = f
	min, ok := lint.ParseSeverity(a.minSeverity)
	if !ok {
		return fmt.Errorf("--min-severity must be error, warning or info, not %q", a.minSeverity)
	}
	a.MinSeverity = min
	return nil
}

// parseLintArguments parses gpuform lint's command line (after "lint").
func parseLintArguments(args []string) (*lintArguments, error) {
	a := &lintArguments{}
	return a, parseArguments(args, a.register, maxOneDir, a.finish)
}

func newLintCommand(s Streams) *cobra.Command {
	a := &lintArguments{}
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
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			m, err := runLint(s, a)
			if err != nil {
				return err
			}
			if err := writeLint(s, a.Format, a.Dir, m.diags, m.result, m.files); err != nil {
				return err
			}
			if code := lint.ExitCode(m.result, m.diags); code != ExitOK {
				return exitError{code}
			}
			return nil
		},
	}
	a.register(cmd.Flags())
	completeValues(cmd, "format", formatNames()...)
	completeValues(cmd, "min-severity", "error", "warning", "info")
	return cmd
}

// lintModel is what lint found: the spec's diagnostics and the rules'
// findings, with the files they point into.
type lintModel struct {
	diags  hcl.Diagnostics
	result lint.Result
	files  map[string]*hcl.File
}

// runLint is gpuform lint's work: it loads the spec, the lint
// configuration and the lock file, and runs the rules.
func runLint(s Streams, a *lintArguments) (*lintModel, error) {
	cfg, diags := a.Spec.load(s, a.Dir)
	k, err := s.KB()
	if err != nil {
		return nil, err
	}
	opts := lint.Options{MinSeverity: a.MinSeverity, KB: k}
	configPath := a.ConfigPath
	if configPath == "" {
		if _, err := os.Stat(filepath.Join(a.Dir, spec.LintConfigFile)); err == nil {
			configPath = filepath.Join(a.Dir, spec.LintConfigFile)
		}
	} else if _, err := os.Stat(configPath); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("lint configuration %s does not exist", configPath)
	}
	if configPath != "" {
		lc, f, d := spec.LoadLintFile(configPath)
		diags = append(diags, d...)
		if f != nil {
			cfg.Files[configPath] = f
		}
		opts.Config = lc
	}
	lock, lf, d := spec.LoadLockFile(filepath.Join(a.Dir, spec.LockFileName))
	diags = append(diags, d...)
	if lf != nil {
		cfg.Files[lf.Body.MissingItemRange().Filename] = lf
	}
	opts.Pins = lintPins(lock)
	res, d := lint.Run(cfg, opts)
	diags = append(diags, d...)
	return &lintModel{diags: diags, result: res, files: cfg.Files}, nil
}

// writeLint is lint's view: every -format renders the same model.
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
