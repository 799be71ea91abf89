package diagview

import (
	"fmt"
	"io"
	"strings"

	"github.com/gpuform/gpuform/internal/palette"

	"github.com/hashicorp/hcl/v2"
	"github.com/mitchellh/go-wordwrap"
)

// TextOptions control human output.
type TextOptions struct {
	// Color enables ANSI colours; the CLI sets it only on a terminal without
	// NO_COLOR, so files and CI logs stay plain.
	Color bool
	// Width wraps detail paragraphs; zero means 78 columns.
	Width int
}

// WriteText renders diagnostics and findings the way Terraform renders
// diagnostics (hcl's diagnostic text writer): severity and summary, the
// source line with the offending expression marked, the detail, and for
// findings the rule name and its documentation link. files supplies the
// source for snippets; an entry that is missing only drops the snippet.
func WriteText(w io.Writer, diags hcl.Diagnostics, findings []Finding, files map[string]*hcl.File, opts TextOptions) error {
	width := opts.Width
	if width <= 0 {
		width = 78
	}
	var b strings.Builder
	src := newSources(files)
	for _, it := range items(diags, findings) {
		label, role := severityLabel(it.severity)
		// gpuform's one palette (internal/palette): an error is the red of
		// verify's FAIL and apply's failures.
		pal := palette.New(opts.Color)
		fmt.Fprintf(&b, "%s %s\n", pal.Paint(role, label+":"), pal.Bold(it.summary))
		if hasFile(it.subject) {
			s, ok := src.snippet(it.subject, it.context)
			fmt.Fprintf(&b, "\n  on %s line %d, column %d", it.subject.Filename, it.subject.Start.Line, it.subject.Start.Column)
			if ok && s.context != "" {
				fmt.Fprintf(&b, ", in %s", s.context)
			}
			b.WriteString(":\n")
			if ok {
				writeSnippet(&b, s, opts.Color)
			}
		}
		if it.detail != "" {
			b.WriteByte('\n')
			for _, para := range strings.Split(it.detail, "\n") {
				b.WriteString(wordwrap.WrapString(para, uint(width)))
				b.WriteByte('\n')
			}
		}
		if it.rule != "" {
			b.WriteByte('\n')
			fmt.Fprintf(&b, "Rule: %s (%s)\n", palette.New(opts.Color).Paint(palette.Note, it.rule), it.link)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func severityLabel(s Severity) (string, palette.Role) {
	switch s {
	case Error:
		return "Error", palette.Fail
	case Warning:
		return "Warning", palette.Warn
	}
	return "Info", palette.Info
}

// writeSnippet prints the numbered source lines. With colour the offending
// expression is underlined, as hcl's writer does; without colour a caret
// line under a single-line snippet marks it, since plain logs have no
// other way to show the column.
func writeSnippet(b *strings.Builder, s snippet, color bool) {
	lines := strings.Split(s.code, "\n")
	gutter := len(fmt.Sprint(s.startLine + len(lines) - 1))
	off := 0
	for i, line := range lines {
		n := s.startLine + i
		start, end := s.highlightStart-off, s.highlightEnd-off
		start, end = max(0, min(start, len(line))), max(0, min(end, len(line)))
		if color && end > start {
			line = line[:start] + palette.New(true).Paint(palette.Underline, line[start:end]) + line[end:]
		}
		fmt.Fprintf(b, "  %*d: %s\n", gutter, n, line)
		if !color && len(lines) == 1 && end > start {
			pad := strings.Map(func(r rune) rune {
				if r == '\t' {
					return '\t'
				}
				return ' '
			}, lines[0][:start])
			fmt.Fprintf(b, "  %*s  %s%s\n", gutter, "", pad, strings.Repeat("^", end-start))
		}
		off += len(lines[i]) + 1
	}
}
