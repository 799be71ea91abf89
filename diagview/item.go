package diagview

import (
	"bytes"

	"github.com/hashicorp/hcl/v2"
)

// item is one thing to render: an HCL diagnostic or a lint finding.
type item struct {
	severity Severity
	summary  string
	detail   string
	subject  *hcl.Range
	context  *hcl.Range
	rule     string
	link     string
}

// items merges diagnostics (first, in their own order, as the loader
// reported them) and findings (already sorted by lint.Run).
func items(diags hcl.Diagnostics, findings []Finding) []item {
	out := make([]item, 0, len(diags)+len(findings))
	for _, d := range diags {
		if d == nil {
			continue
		}
		sev := Warning
		if d.Severity == hcl.DiagError {
			sev = Error
		}
		out = append(out, item{severity: sev, summary: d.Summary, detail: d.Detail, subject: d.Subject, context: d.Context})
	}
	for _, f := range findings {
		r := f.Range
		out = append(out, item{severity: f.Severity, summary: f.Summary, detail: f.Detail, subject: &r, rule: f.Rule, link: f.Link})
	}
	return out
}

// hasFile reports whether a range points into a file.
func hasFile(r *hcl.Range) bool { return r != nil && r.Filename != "" }

// snippet is the source lines a range covers, for text and JSON output.
type snippet struct {
	context        string
	code           string
	startLine      int
	highlightStart int
	highlightEnd   int
}

// maxSnippetLines bounds a snippet so a range over a whole block does not
// print the block.
const maxSnippetLines = 3

// sources gives snippets from parsed files. Each file's line starts are
// indexed once, on first use, so rendering n diagnostics on a file of b
// bytes costs O(b + n) and not O(b·n): 1 MB of random bytes yields tens of
// thousands of diagnostics, and rescanning the file for each took minutes.
type sources struct {
	files map[string]*hcl.File
	lines map[string][]int // file name → byte offset of each line's start
}

func newSources(files map[string]*hcl.File) *sources {
	return &sources{files: files, lines: map[string][]int{}}
}

// lineStarts returns the byte offsets at which the lines of name begin.
func (s *sources) lineStarts(name string, src []byte) []int {
	if ls, ok := s.lines[name]; ok {
		return ls
	}
	ls := []int{0}
	for i, c := range src {
		if c == '\n' {
			ls = append(ls, i+1)
		}
	}
	s.lines[name] = ls
	return ls
}

// snippet extracts the lines of subject (widened to context when given)
// from the file's source. ok is false when the source is not available.
func (src *sources) snippet(subject, context *hcl.Range) (snippet, bool) {
	if !hasFile(subject) {
		return snippet{}, false
	}
	f := src.files[subject.Filename]
	if f == nil || f.Bytes == nil {
		return snippet{}, false
	}
	rng := *subject
	if context != nil && context.Filename == subject.Filename && context.ContainsOffset(subject.Start.Byte) {
		rng = *context
	}
	var s snippet
	if cs, ok := f.Nav.(interface{ ContextString(int) string }); ok {
		s.context = cs.ContextString(subject.Start.Byte)
	}
	starts := src.lineStarts(subject.Filename, f.Bytes)
	first, last := rng.Start.Line, min(rng.End.Line, rng.Start.Line+maxSnippetLines-1)
	if first < 1 || first > len(starts) || rng.Start.Byte < 0 || subject.Start.Byte > len(f.Bytes) {
		return snippet{}, false
	}
	last = min(max(last, first), len(starts))
	var code bytes.Buffer
	for line := first; line <= last; line++ {
		lo, hi := starts[line-1], len(f.Bytes)
		if line < len(starts) {
			hi = starts[line] - 1 // without the newline
		}
		text := f.Bytes[lo:hi]
		text = bytes.TrimSuffix(text, []byte("\r"))
		if line > first {
			code.WriteByte('\n')
		}
		code.Write(text)
	}
	s.startLine = first
	s.code = code.String()
	lineStart := starts[first-1]
	s.highlightStart = max(0, subject.Start.Byte-lineStart)
	// Offsets are into code, which starts at the first line's first byte.
	s.highlightEnd = min(len(s.code), max(s.highlightStart, subject.End.Byte-lineStart))
	s.highlightStart = min(s.highlightStart, len(s.code))
	return s, true
}

// ruleIndex maps rule names to their position in rules, for SARIF.
func ruleIndex(rules []Rule) map[string]int {
	m := make(map[string]int, len(rules))
	for i, r := range rules {
		m[r.Name] = i
	}
	return m
}
