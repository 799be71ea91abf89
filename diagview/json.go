package diagview

import (
	"encoding/json"
	"io"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/internal/jsonformat"
)

// JSONDocument is the JSON output: the shape of `terraform validate -json`,
// so editor integrations built for Terraform read it, plus a rule field on
// lint findings.
type JSONDocument struct {
	FormatVersion string           `json:"format_version"`
	Valid         bool             `json:"valid"`
	ErrorCount    int              `json:"error_count"`
	WarningCount  int              `json:"warning_count"`
	Diagnostics   []JSONDiagnostic `json:"diagnostics"`
}

// JSONDiagnostic is one diagnostic or finding.
type JSONDiagnostic struct {
	// Severity is "error", "warning" or "info" (info only for lint findings).
	Severity string       `json:"severity"`
	Summary  string       `json:"summary"`
	Detail   string       `json:"detail"`
	Range    *JSONRange   `json:"range,omitempty"`
	Snippet  *JSONSnippet `json:"snippet,omitempty"`
	// Rule is the lint rule's name; absent for HCL diagnostics.
	Rule string `json:"rule,omitempty"`
}

// JSONRange is a source range with 1-based lines and columns and 0-based bytes.
type JSONRange struct {
	Filename string  `json:"filename"`
	Start    JSONPos `json:"start"`
	End      JSONPos `json:"end"`
}

// JSONPos is one position of a JSONRange.
type JSONPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// JSONSnippet is the source around a range, as Terraform writes it.
type JSONSnippet struct {
	Context              *string `json:"context"`
	Code                 string  `json:"code"`
	StartLine            int     `json:"start_line"`
	HighlightStartOffset int     `json:"highlight_start_offset"`
	HighlightEndOffset   int     `json:"highlight_end_offset"`
	Values               []any   `json:"values"`
}

// NewJSONDocument builds the JSON document. It is valid when nothing is an
// error. files supplies snippets and may be nil.
func NewJSONDocument(diags hcl.Diagnostics, findings []Finding, files map[string]*hcl.File) JSONDocument {
	src := newSources(files)
	doc := JSONDocument{FormatVersion: jsonformat.Version, Diagnostics: []JSONDiagnostic{}}
	for _, it := range items(diags, findings) {
		d := JSONDiagnostic{Severity: it.severity.String(), Summary: it.summary, Detail: it.detail, Rule: it.rule}
		switch it.severity {
		case Error:
			doc.ErrorCount++
		case Warning:
			doc.WarningCount++
		}
		if hasFile(it.subject) {
			r := it.subject
			d.Range = &JSONRange{
				Filename: r.Filename,
				Start:    JSONPos{Line: r.Start.Line, Column: r.Start.Column, Byte: r.Start.Byte},
				End:      JSONPos{Line: r.End.Line, Column: r.End.Column, Byte: r.End.Byte},
			}
			if s, ok := src.snippet(it.subject, it.context); ok {
				js := &JSONSnippet{Code: s.code, StartLine: s.startLine, HighlightStartOffset: s.highlightStart, HighlightEndOffset: s.highlightEnd, Values: []any{}}
				if s.context != "" {
					c := s.context
					js.Context = &c
				}
				d.Snippet = js
			}
		}
		doc.Diagnostics = append(doc.Diagnostics, d)
	}
	doc.Valid = doc.ErrorCount == 0
	return doc
}

// WriteJSON writes the JSON document, indented, followed by a newline. It
// serves `gpuform validate -json` too: pass no findings.
func WriteJSON(w io.Writer, diags hcl.Diagnostics, findings []Finding, files map[string]*hcl.File) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(NewJSONDocument(diags, findings, files))
}
