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

type fmtOptions struct {
	check     bool
	diff      bool
	recursive bool
	list      bool
	write     bool
}

func newFmtCommand(s Streams) *cobra.Command {
	var o fmtOptions
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
			path := dirArg(args)
			if path == "-" {
				return fmtStdin(s, o)
			}
			return fmtPath(s, path, o)
		},
	}
	cmd.Flags().BoolVar(&o.check, "check", false, "do not write; exit 2 if any file is not formatted")
	cmd.Flags().BoolVar(&o.diff, "diff", false, "print the changes as a unified diff")
	cmd.Flags().BoolVar(&o.recursive, "recursive", false, "also process subdirectories")
	cmd.Flags().BoolVar(&o.list, "list", true, "print the names of files whose formatting differs")
	cmd.Flags().BoolVar(&o.write, "write", true, "write the result back to the file")
	return cmd
}

func fmtStdin(s Streams, o fmtOptions) error {
	src, err := readlimit.ReadAll(s.In, "standard input", spec.MaxFileSize)
	if err != nil {
		fmt.Fprintf(s.Err, "Error: %s\n", err)
		return exitError{ExitFailed}
	}
	out, diags := formatSource(src, "<stdin>")
	if diags.HasErrors() {
		_ = diagview.WriteText(s.Err, diags, nil, map[string]*hcl.File{"<stdin>": {Bytes: src}}, diagview.TextOptions{Color: s.Color(s.Err)})
		return exitError{ExitFailed}
	}
	if o.check {
		if !bytes.Equal(src, out) {
			return exitError{ExitReport}
		}
		return nil
	}
	_, err = s.Out.Write(out)
	return err
}

func fmtPath(s Streams, root string, o fmtOptions) error {
	info, err := os.Stat(root)
	if err != nil {
		fmt.Fprintf(s.Err, "Error: %s\n", err)
		return exitError{ExitFailed}
	}
	var files []string
	var refused []error
	switch {
	case info.Mode().IsRegular():
		// A file named on the command line must be one fmt knows: the
		// HCL parser's complaints about a README or a YAML file would
		// suggest the file is a broken spec.
		if !isFmtTarget(filepath.Base(root)) {
			fmt.Fprintf(s.Err, "Error: %s is not a gpuform file: fmt rewrites files ending in %s\n", root, strings.Join(fmtSuffixes, ", "))
			return exitError{ExitFailed}
		}
		files = []string{root}
	case !info.IsDir():
		// A device or pipe (/dev/zero, a FIFO) would be read forever or
		// replaced by a regular file.
		fmt.Fprintf(s.Err, "Error: %s is neither a regular file nor a directory; use \"-\" to format standard input\n", root)
		return exitError{ExitFailed}
	default:
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != root && (!o.recursive || strings.HasPrefix(d.Name(), ".")) {
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
			fmt.Fprintf(s.Err, "Error: %s\n", err)
			return exitError{ExitFailed}
		}
	}
	failed, unformatted := len(refused) > 0, false
	for _, err := range refused {
		fmt.Fprintf(s.Err, "Error: %s\n", err)
	}
	for _, f := range files {
		src, err := readlimit.ReadRegularFile(f, spec.MaxFileSize)
		if err != nil {
			fmt.Fprintf(s.Err, "Error: %s\n", err)
			failed = true
			continue
		}
		out, diags := formatSource(src, f)
		if diags.HasErrors() {
			_ = diagview.WriteText(s.Err, diags, nil, map[string]*hcl.File{f: {Bytes: src}}, diagview.TextOptions{Color: s.Color(s.Err)})
			failed = true
			continue
		}
		if bytes.Equal(src, out) {
			continue
		}
		unformatted = true
		if o.list {
			fmt.Fprintln(s.Out, f)
		}
		if o.diff {
			s.Out.Write(diff.Diff("old/"+strings.TrimPrefix(filepath.ToSlash(f), "/"), src, "new/"+strings.TrimPrefix(filepath.ToSlash(f), "/"), out))
		}
		if o.write && !o.check {
			if err := writeFileAtomic(f, out); err != nil {
				fmt.Fprintf(s.Err, "Error: %s\n", err)
				failed = true
			}
		}
	}
	switch {
	case failed:
		return exitError{ExitFailed}
	case o.check && unformatted:
		return exitError{ExitReport}
	}
	return nil
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
