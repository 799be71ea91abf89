// Package diagtext renders hcl.Diagnostics for people, in Terraform's look:
// a severity and summary, the file, line and column, the source line with
// the offending range underlined, and the detail. It is a view only: it
// decides nothing about what is an error.
package diagtext

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Options control rendering.
type Options struct {
	// Color adds ANSI colour; set it only for terminals without NO_COLOR.
	Color bool
	// Width wraps detail text; zero means 78 columns.
	Width int
	// Extra is printed after the detail, e.g. a lint rule's name and link.
	Extra func(d *hcl.Diagnostic) string
}

const (
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	bold   = "\x1b[1m"
	reset  = "\x1b[0m"
)

// Write renders every diagnostic to w, each followed by a blank line.
func Write(w io.Writer, diags hcl.Diagnostics, files map[string]*hcl.File, opts Options) error {
	var buf bytes.Buffer
	for _, d := range diags {
		writeOne(&buf, d, files, opts)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func writeOne(buf *bytes.Buffer, d *hcl.Diagnostic, files map[string]*hcl.File, opts Options) {
	label, col := "Error", red
	if d.Severity == hcl.DiagWarning {
		label, col = "Warning", yellow
	}
	if opts.Color {
		fmt.Fprintf(buf, "%s%s%s: %s%s\n", bold, col, label, d.Summary, reset)
	} else {
		fmt.Fprintf(buf, "%s: %s\n", label, d.Summary)
	}
	if d.Subject != nil {
		writeSnippet(buf, d, files, opts)
	}
	if d.Detail != "" {
		buf.WriteString("\n")
		buf.WriteString(wrap(d.Detail, width(opts)))
		buf.WriteString("\n")
	}
	if opts.Extra != nil {
		if s := opts.Extra(d); s != "" {
			buf.WriteString("\n")
			buf.WriteString(s)
			buf.WriteString("\n")
		}
	}
	buf.WriteString("\n")
}

func width(o Options) int {
	if o.Width > 0 {
		return o.Width
	}
	return 78
}

func writeSnippet(buf *bytes.Buffer, d *hcl.Diagnostic, files map[string]*hcl.File, opts Options) {
	s := *d.Subject
	ctxRange := s
	if d.Context != nil {
		ctxRange = hcl.RangeOver(s, *d.Context)
	}
	fmt.Fprintf(buf, "\n  on %s line %d, column %d", s.Filename, s.Start.Line, s.Start.Column)
	f := files[s.Filename]
	if f == nil || f.Bytes == nil {
		buf.WriteString(":\n  (source not available)\n")
		return
	}
	if body, ok := f.Body.(interface {
		OutermostBlockAtPos(hcl.Pos) *hcl.Block
	}); ok {
		if b := body.OutermostBlockAtPos(s.Start); b != nil {
			fmt.Fprintf(buf, ", in %s", blockLabel(b))
		}
	}
	buf.WriteString(":\n")
	lines := strings.Split(string(f.Bytes), "\n")
	first, last := ctxRange.Start.Line, ctxRange.End.Line
	if last-first > 2 {
		// A long context (a whole block) is cut down to the subject's
		// first line; the underline runs to its end.
		first, last = s.Start.Line, s.Start.Line
	}
	for ln := first; ln <= last && ln <= len(lines); ln++ {
		if ln < 1 {
			continue
		}
		text := strings.TrimRight(lines[ln-1], "\r")
		fmt.Fprintf(buf, "  %4d: %s\n", ln, expandTabs(text))
		if ln >= s.Start.Line && ln <= s.End.Line {
			start, end := 1, len(text)+1
			if ln == s.Start.Line {
				start = s.Start.Column
			}
			if ln == s.End.Line {
				end = s.End.Column
			}
			if ln > s.Start.Line {
				// Continuation lines of a multi-line subject are shown
				// without underlining, to keep the snippet readable.
				continue
			}
			if end <= start {
				end = start + 1
			}
			marks := strings.Repeat("^", end-start)
			if opts.Color {
				marks = red + marks + reset
			}
			fmt.Fprintf(buf, "        %s%s\n", strings.Repeat(" ", displayWidth(text, start-1)), marks)
		}
	}
}

// displayWidth counts the display columns of the first n bytes of text,
// tabs expanded, so the underline lines up with the printed line.
func displayWidth(text string, n int) int {
	if n > len(text) {
		n = len(text)
	}
	return len([]rune(expandTabs(text[:n])))
}

func expandTabs(s string) string { return strings.ReplaceAll(s, "\t", "  ") }

func blockLabel(b *hcl.Block) string {
	var sb strings.Builder
	sb.WriteString(b.Type)
	for _, l := range b.Labels {
		fmt.Fprintf(&sb, " %q", l)
	}
	return sb.String()
}

// wrap breaks prose at width without splitting words; lines that start with
// spaces (examples) are kept as they are.
func wrap(s string, width int) string {
	var out []string
	for _, para := range strings.Split(s, "\n") {
		if strings.HasPrefix(para, " ") || len(para) <= width {
			out = append(out, para)
			continue
		}
		line := ""
		for _, w := range strings.Fields(para) {
			if line != "" && len(line)+1+len(w) > width {
				out = append(out, line)
				line = w
				continue
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
