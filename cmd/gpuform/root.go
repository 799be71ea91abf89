package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/bind"
)

// Version is this build's version, checked against required_version.
const Version = "0.1.0"

// Exit codes: one contract for every command (docs/design.md, "Exit codes").
const (
	// ExitOK means clean: nothing to report.
	ExitOK = 0
	// ExitFailed means gpuform could not do its job.
	ExitFailed = 1
	// ExitReport means it ran and has something to report (findings,
	// changes with -detailed-exitcode, failed checks).
	ExitReport = 2
)

// Streams are the process's standard streams and environment, injected so
// that tests run the CLI in-process.
type Streams struct {
	In      io.Reader
	Out     io.Writer
	Err     io.Writer
	Environ []string
	// interrupts is the signal handler of the real process; nil in
	// in-process tests.
	interrupts *interrupts
	// launch replaces gpuform bind's exec in in-process tests, which must
	// not turn the test binary into the command; nil is bind.Exec.
	launch func(*bind.Launch) error
	// kb loads the knowledge base once per Run (Streams.KB).
	kb func() (*kb.KB, error)
}

// Getenv looks a variable up in the injected environment.
func (s Streams) Getenv(key string) string {
	for _, kv := range s.Environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Color reports whether w should get ANSI colour: a terminal, and NO_COLOR
// unset (https://no-color.org).
func (s Streams) Color(w io.Writer) bool {
	// https://no-color.org: present and not empty disables colour.
	if v, _ := lookupEnv(s.Environ, "NO_COLOR"); v != "" {
		return false
	}
	return s.IsTerminal(w)
}

// Width is the width in columns of the terminal w writes to: what a
// writer that stands in for a terminal says (tests: TermWidth), the
// terminal's own size, else $COLUMNS; 0 when none is known, and the view
// picks its default.
func (s Streams) Width(w io.Writer) int {
	if t, ok := w.(interface{ TermWidth() int }); ok {
		return t.TermWidth()
	}
	if f, ok := w.(*os.File); ok {
		if c, _, err := term.GetSize(int(f.Fd())); err == nil && c > 0 {
			return c
		}
	}
	if c, err := strconv.Atoi(s.Getenv("COLUMNS")); err == nil && c > 0 {
		return c
	}
	return 0
}

// IsTerminal reports whether w is a terminal (for live progress lines). A
// writer that is not a file may say so itself (tests stand in for a
// terminal this way).
func (s Streams) IsTerminal(w io.Writer) bool {
	if t, ok := w.(interface{ IsTerminal() bool }); ok {
		return t.IsTerminal()
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func lookupEnv(env []string, key string) (string, bool) {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// annotationGraceful marks a command that honours its context's
// cancellation, so the first SIGINT/SIGTERM stops it gracefully.
const annotationGraceful = "gpuform.graceful"

// graceful is the annotation map of such a command.
func graceful() map[string]string { return map[string]string{annotationGraceful: "true"} }

// exitError carries an exit code through cobra without printing anything
// more: the command has already said what went wrong.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Run executes the CLI with args and returns the process exit code.
func Run(ctx context.Context, args []string, s Streams) int {
	typed := args
	args = normalizeArgs(args)
	// -no-color (Terraform's flag) is NO_COLOR for this run: every
	// command already asks Streams.Color before writing colour.
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--no-color" || a == "--no-color=true" {
			s.Environ = append(append([]string(nil), s.Environ...), "NO_COLOR=1")
		}
	}
	if s.kb == nil {
		s.kb = newKBLoader()
	}
	root := newRootCommand(s)
	root.SetArgs(args)
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fmt.Fprintf(s.Err, "Error: %s\n", asTyped(err, typed))
	return ExitFailed
}

func newRootCommand(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "gpuform",
		Short: "Declare, plan, apply and verify the software and tuning of GPU servers",
		Long: `gpuform does for GPU servers what Terraform does for cloud resources.

Describe the node you want in HCL (*.gpuform.hcl): NVIDIA driver, CUDA, NCCL,
container runtime, /dev/shm, NUMA binding, GPU-to-NIC affinity. Then:

  gpuform lint      check the spec before anything is touched
  gpuform plan      show what would change on every host
  gpuform apply     change it over SSH
  gpuform verify    prove the node works (NVML checks, NCCL self-tests)

Flags may be written Terraform-style with one dash (-json) or with two (--json).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.SetVersionTemplate("gpuform v{{.Version}}\n")
	// Commands that reach hosts are annotated graceful: the first signal
	// cancels them (see interrupts); every other command stops at once.
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		s.interrupts.setGraceful(cmd.Annotations[annotationGraceful] == "true")
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return suggestFlag(cmd, cleanFlagError(err)) })
	// Read in Run, before the commands are built; declared here so that
	// every command accepts it and lists it in its help.
	root.PersistentFlags().Bool("no-color", false, "never colour the output (as NO_COLOR=1)")
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				// An unknown topic is a usage error (exit 1), as an unknown
				// command is; cobra's default help exits 0.
				return fmt.Errorf("unknown help topic %q: run gpuform help for the commands", strings.Join(args, " "))
			}
			return target.Help()
		},
	})
	root.AddCommand(
		newVersionCommand(s),
		newValidateCommand(s),
		newFmtCommand(s),
		newLintCommand(s),
		newFactsCommand(s),
		newGraphCommand(s),
		newLockCommand(s),
		newBundleCommand(s),
		newImportCommand(s),
		newVerifyCommand(s),
		newBenchCommand(s),
		newAlertsCommand(s),
		newDrillCommand(s),
		newAgentCommand(s),
		newPlanCommand(s),
		newApplyCommand(s),
		newBindCommand(s),
		newShowCommand(s),
		newKubernetesCommand(s),
	)
	strictCompletion(s, root)
	completeTargets(s, root)
	return root
}

// strconvNoise is the Go parser's part of pflag's message for a flag value
// of the wrong kind ("strconv.ParseInt: parsing \"abc\": invalid syntax").
var strconvNoise = lazyre.New(`strconv\.Parse(Int|Uint|Bool|Float): parsing "[^"]*": (invalid syntax|value out of range)`)

// cleanFlagError says what a bad flag value should have been, in words,
// instead of the Go function that refused it.
func cleanFlagError(err error) error {
	msg := err.Error()
	if m := strconvNoise.FindStringSubmatch(msg); m != nil {
		want := map[string]string{"Int": "a whole number", "Uint": "a whole number", "Bool": "true or false", "Float": "a number"}[m[1]]
		msg = strings.Replace(msg, m[0], want+" is required", 1)
	}
	return errors.New(msg)
}

var singleDashLong = lazyre.New(`^-[a-z][a-z0-9-]+(=.*)?$`)

// normalizeArgs lets users write Terraform's single-dash long flags
// (-json, -var x=1, -detailed-exitcode) by doubling the dash; pflag would
// otherwise read "-json" as the shorthands j, s, o, n.
func normalizeArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if singleDashLong.MatchString(a) {
			a = "-" + a
		}
		out = append(out, a)
	}
	return out
}
