package format

import (
	"bufio"
	"bytes"
	"sort"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/lint"
)

// item is one thing to render: an HCL diagnostic or a lint finding.
type item struct {
	severity lint.Severity
	summary  string
	detail   string
	subject  *hcl.Range
	context  *hcl.Range
	rule     string
	link     string
}

// items merges diagnostics (first, in their own order, as the loader
// reported them) and findings (already sorted by lint.Run).
func items(diags hcl.Diagnostics, findings []lint.Finding) []item {
	out := make([]item, 0, len(diags)+len(findings))
	for _, d := range diags {
		if d == nil {
			continue
		}
		sev := lint.Warning
		if d.Severity == hcl.DiagError {
			sev = lint.Error
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

// makeSnippet extracts the lines of subject (widened to context when given)
// from the file's source. ok is false when the source is not available.
func makeSnippet(files map[string]*hcl.File, subject, context *hcl.Range) (snippet, bool) {
	if !hasFile(subject) {
		return snippet{}, false
	}
	f := files[subject.Filename]
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
	sc := hcl.NewRangeScanner(f.Bytes, subject.Filename, bufio.ScanLines)
	var code bytes.Buffer
	first := true
	for sc.Scan() {
		lr := sc.Range()
		if lr.End.Line < rng.Start.Line {
			continue
		}
		if lr.Start.Line > rng.End.Line || lr.Start.Line >= rng.Start.Line+maxSnippetLines {
			break
		}
		if first {
			s.startLine = lr.Start.Line
			s.highlightStart = max(0, subject.Start.Byte-lr.Start.Byte)
			first = false
		} else {
			code.WriteByte('\n')
		}
		code.Write(sc.Bytes())
	}
	if first {
		return snippet{}, false
	}
	s.code = code.String()
	// Offsets are into code, which starts at the first line's first byte.
	lineStart := subject.Start.Byte - s.highlightStart
	s.highlightEnd = min(len(s.code), max(s.highlightStart, subject.End.Byte-lineStart))
	s.highlightStart = min(s.highlightStart, len(s.code))
	return s, true
}

// ruleIndex maps rule names to their position in rules, for SARIF.
func ruleIndex(rules []lint.Rule) map[string]int {
	m := make(map[string]int, len(rules))
	for i, r := range rules {
		m[r.Name] = i
	}
	return m
}

// sortedFileNames returns the keys of files in order.
func sortedFileNames(files map[string]*hcl.File) []string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
