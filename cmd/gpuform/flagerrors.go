package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// unknownFlagError is pflag's "unknown flag" with the command's flags
// nearest to the mistyped one, as cobra suggests mistyped subcommands.
type unknownFlagError struct {
	name    string
	suggest []string
}

func (e unknownFlagError) Error() string { return e.render("--") }

// render writes the message with the dash style the user typed.
func (e unknownFlagError) render(dash string) string {
	msg := "unknown flag: " + dash + e.name
	if len(e.suggest) == 0 {
		return msg
	}
	msg += "\n\nDid you mean this?"
	for _, s := range e.suggest {
		msg += "\n\t" + dash + s
	}
	return msg
}

var unknownFlag = lazyre.New(`^unknown flag: --([^\s=]+)$`)

// suggestFlag turns pflag's unknown-flag error into one that names the
// command's nearest flags (hcl's didyoumean distance and threshold).
func suggestFlag(cmd *cobra.Command, err error) error {
	m := unknownFlag.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	name := m[1]
	type cand struct {
		name string
		dist int
	}
	var cands []cand
	seen := map[string]bool{}
	add := func(f *pflag.Flag) {
		if f.Hidden || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		d := levenshtein.Distance(name, f.Name, nil)
		if d < 3 || (len(name) >= 3 && strings.HasPrefix(f.Name, name)) {
			cands = append(cands, cand{f.Name, d})
		}
	}
	cmd.LocalFlags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].dist != cands[j].dist {
			return cands[i].dist < cands[j].dist
		}
		return cands[i].name < cands[j].name
	})
	out := unknownFlagError{name: name}
	for i, c := range cands {
		if i == 3 {
			break
		}
		out.suggest = append(out.suggest, c.name)
	}
	return out
}

var longFlagRef = lazyre.New(`--([a-z][a-z0-9-]*)`)

// asTyped echoes flags in an error message as the user wrote them:
// normalizeArgs doubled the dash of -json for pflag, and pflag's messages
// name flags with two dashes; a user who typed -tagret reads -tagret.
func asTyped(err error, args []string) string {
	single := map[string]bool{}
	double := map[string]bool{}
	for _, a := range args {
		if a == "--" {
			break
		}
		if singleDashLong.MatchString(a) {
			single[strings.TrimPrefix(strings.SplitN(a, "=", 2)[0], "-")] = true
		} else if strings.HasPrefix(a, "--") {
			double[strings.TrimPrefix(strings.SplitN(a, "=", 2)[0], "--")] = true
		}
	}
	var uf unknownFlagError
	if errors.As(err, &uf) {
		if single[uf.name] && !double[uf.name] {
			return uf.render("-")
		}
		return uf.render("--")
	}
	return longFlagRef.ReplaceAllStringFunc(err.Error(), func(ref string) string {
		name := ref[2:]
		if single[name] && !double[name] {
			return "-" + name
		}
		return ref
	})
}

// completionShells are the shells cobra writes completion scripts for.
func completionShells() []string { return []string{"bash", "zsh", "fish", "powershell"} }

// strictCompletion makes `gpuform completion SHELL` fail for a shell it
// cannot write a script for: cobra's bare completion command prints its
// help and exits 0, so `gpuform completion tcsh > file` looked successful.
func strictCompletion(s Streams, root *cobra.Command) {
	// cobra's completion command binds the root's output when it is made,
	// so the streams are set first (Run sets them again, to the same).
	root.SetOut(s.Out)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return fmt.Errorf("unknown shell %q for completion: gpuform writes scripts for %s", args[0], strings.Join(completionShells(), ", "))
		}
	}
}

// jsonAliasOf makes -json the same as -format json on the commands whose
// -format predates it (lint, verify), over a command's parsed flags: every
// command with JSON output takes -json, as Terraform's do. -json with
// another -format is refused rather than one silently winning.
func jsonAliasOf(fs *pflag.FlagSet, asJSON bool, format *string) error {
	if !asJSON {
		return nil
	}
	if fs.Changed("format") && *format != "json" {
		return fmt.Errorf("--json conflicts with --format %s: give one of them", *format)
	}
	*format = "json"
	return nil
}
