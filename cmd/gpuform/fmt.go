package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuform/gpuform/diagview"
	"github.com/gpuform/gpuform/internal/readlimit"
	"github.com/gpuform/gpuform/spec"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/rogpeppe/go-internal/diff"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// fmtSuffixes are the files gpuform fmt rewrites.
var fmtSuffixes = []string{".gpuform.hcl", ".gpuvars.hcl", ".gpuform-lint.hcl", ".gpuform.lock.hcl"}

func isFmtTarget(name string) bool {
	for _, s := range fmtSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// fmtArguments are the arguments of gpuform fmt.
type fmtArguments struct {
	// Path is the file or directory to format, "-" for standard input, "."
	// when omitted.
	Path string
	// Check is -check: write nothing; exit 2 if a file is not formatted.
	Check bool
	// Diff is -diff: print the changes as a unified diff.
	Diff bool
	// Recursive is -recursive: also process subdirectories.
	Recursive bool
	// List is -list: print the names of files whose formatting differs.
	List bool
	// Write is -write: write the result back to the file.
	Write bool
}

func (a *fmtArguments) register(fs *pflag.FlagSet) {
	fs.BoolVar(&a.Check, "check", false, "do not write; exit 2 if any file is not formatted")
	fs.BoolVar(&a.Diff, "diff", false, "print the changes as a unified diff")
	fs.BoolVar(&a.Recursive, "recursive", false, "also process subdirectories")
	fs.BoolVar(&a.List, "list", true, "print the names of files whose formatting differs")
	fs.BoolVar(&a.Write, "write", true, "write the result back to the file")
}

// finish takes the path.
func (a *fmtArguments) finish(_ *pflag.FlagSet, args []string) error {
	a.Path = dirArg(args)
	return nil
}

// parseFmtArguments parses gpuform fmt's command line (after "fmt").
func parseFmtArguments(args []string) (*fmtArguments, error) {
	a := &fmtArguments{}
	return a, parseArguments(args, a.register, cobra.MaximumNArgs(1), a.finish)
}

func newFmtCommand(s Streams) *cobra.Command {
	a := &fmtArguments{}
	cmd := &cobra.Command{
		Use:   "fmt [PATH]",
		Short: "Rewrite spec files in the canonical format",
		Long: `Fmt rewrites *.gpuform.hcl, *.gpuvars.hcl, .gpuform-lint.hcl and
.gpuform.lock.hcl files in the canonical layout (hclwrite's, as terraform
fmt). PATH is a file, a directory (default: the current one) or "-" for
standard input. A symlinked file is rewritten where it points.

Exit status: 0 when every file was already formatted or was rewritten; 1 on a
syntax error or unreadable file; 2 with -check when a file is not formatted.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			v := fmtView{s: s, list: a.List, diff: a.Diff}
			var m fmtModel
			if a.Path == "-" {
				var err error
				if m, err = fmtStdin(s, a, v); err != nil {
					return err
				}
			} else {
				m = fmtPath(a, v)
			}
			switch {
			case m.Failed:
				return exitError{ExitFailed}
			case a.Check && m.Unformatted:
				return exitError{ExitReport}
			}
			return nil
		},
	}
	a.register(cmd.Flags())
	return cmd
}

// fmtModel is what gpuform fmt found: a file it could not read, parse or
// write (Failed), and a file that was not formatted (Unformatted). Each
// was reported through the view as fmt came to it.
type fmtModel struct {
	Failed      bool
	Unformatted bool
}

// fmtStdin is gpuform fmt's work on standard input: the formatted source
// goes to standard output, or with -check nowhere; the error is one of
// writing it.
func fmtStdin(s Streams, a *fmtArguments, v fmtView) (fmtModel, error) {
	src, err := readlimit.ReadAll(s.In, "standard input", spec.MaxFileSize)
	if err != nil {
		v.Error(err)
		return fmtModel{Failed: true}, nil
	}
	out, diags := formatSource(src, "<stdin>")
	if diags.HasErrors() {
		v.Diagnostics(diags, "<stdin>", src)
		return fmtModel{Failed: true}, nil
	}
	if a.Check {
		return fmtModel{Unformatted: !bytes.Equal(src, out)}, nil
	}
	return fmtModel{}, v.Source(out)
}

// fmtPath is gpuform fmt's work on a file or directory: each gpuform
// file not formatted is reported and, unless -check or -write=false,
// rewritten.
func fmtPath(a *fmtArguments, v fmtView) fmtModel {
	root := a.Path
	info, err := os.Stat(root)
	if err != nil {
		v.Error(err)
		return fmtModel{Failed: true}
	}
	var files []string
	var refused []error
	switch {
	case info.Mode().IsRegular():
		// A file named on the command line must be one fmt knows: the
		// HCL parser's complaints about a README or a YAML file would
		// suggest the file is a broken spec.
		if !isFmtTarget(filepath.Base(root)) {
			v.Error(fmt.Errorf("%s is not a gpuform file: fmt rewrites files ending in %s", root, strings.Join(fmtSuffixes, ", ")))
			return fmtModel{Failed: true}
		}
		files = []string{root}
	case !info.IsDir():
		// A device or pipe (/dev/zero, a FIFO) would be read forever or
		// replaced by a regular file.
		v.Error(fmt.Errorf("%s is neither a regular file nor a directory; use \"-\" to format standard input", root))
		return fmtModel{Failed: true}
	default:
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != root && (!a.Recursive || strings.HasPrefix(d.Name(), ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if isFmtTarget(d.Name()) {
				// A file named on the command line is the operator's
				// choice; one found in a directory may be a committed link
				// out of the repository, never to be shown or rewritten.
				if err := readlimit.LinkLeavesRepository(p); err != nil {
					refused = append(refused, err)
					return nil
				}
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			v.Error(err)
			return fmtModel{Failed: true}
		}
	}
	m := fmtModel{Failed: len(refused) > 0}
	for _, err := range refused {
		v.Error(err)
	}
	for _, f := range files {
		src, err := readlimit.ReadRegularFile(f, spec.MaxFileSize)
		if err != nil {
			v.Error(err)
			m.Failed = true
			continue
		}
		out, diags := formatSource(src, f)
		if diags.HasErrors() {
			v.Diagnostics(diags, f, src)
			m.Failed = true
			continue
		}
		if bytes.Equal(src, out) {
			continue
		}
		m.Unformatted = true
		v.Unformatted(f, src, out)
		if a.Write && !a.Check {
			if err := writeFileAtomic(f, out); err != nil {
				v.Error(err)
				m.Failed = true
			}
		}
	}
	return m
}

// fmtView reports what gpuform fmt comes to: errors and syntax
// diagnostics on standard error; the names (-list) and diffs (-diff) of
// files not formatted, or formatted standard input, on standard output.
type fmtView struct {
	s          Streams
	list, diff bool
}

// Error reports a file or directory fmt could not read or write.
func (v fmtView) Error(err error) {
	fmt.Fprintf(v.s.Err, "Error: %s\n", err)
}

// Diagnostics reports the syntax errors of the file name, whose source is
// src.
func (v fmtView) Diagnostics(diags hcl.Diagnostics, name string, src []byte) {
	_ = diagview.WriteText(v.s.Err, diags, nil, map[string]*hcl.File{name: {Bytes: src}}, diagview.TextOptions{Color: v.s.Color(v.s.Err)})
}

// Unformatted reports the file f, which formats from src to out.
func (v fmtView) Unformatted(f string, src, out []byte) {
	if v.list {
		fmt.Fprintln(v.s.Out, f)
	}
	if v.diff {
		v.s.Out.Write(diff.Diff("old/"+strings.TrimPrefix(filepath.ToSlash(f), "/"), src, "new/"+strings.TrimPrefix(filepath.ToSlash(f), "/"), out))
	}
}

// Source writes formatted standard input.
func (v fmtView) Source(out []byte) error {
	_, err := v.s.Out.Write(out)
	return err
}

// formatSource checks the syntax first (hclwrite formats invalid input
// without complaint) and then formats.
func formatSource(src []byte, name string) ([]byte, hcl.Diagnostics) {
	if d := spec.CheckNesting(src, name); d.HasErrors() {
		return nil, d
	}
	_, diags := hclwrite.ParseConfig(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	return hclwrite.Format(src), nil
}
