package diagview

import (
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Format names an output format of `gpuform lint -format`.
type Format string

// The output formats.
const (
	Text    Format = "text"
	Compact Format = "compact"
	JSON    Format = "json"
	SARIF   Format = "sarif"
)

// Formats lists every format, for flag help and validation.
var Formats = []Format{Text, Compact, JSON, SARIF}

// ParseFormat reads a -format value ("default" is an alias of text, as in
// tflint).
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case Text, Compact, JSON, SARIF:
		return f, nil
	case "default", "":
		return Text, nil
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown format %q: use one of %s", s, strings.Join(names, ", "))
}

// Input is everything a writer may need; each format uses what it needs.
type Input struct {
	// Diags are HCL diagnostics (loader or lint configuration errors).
	Diags hcl.Diagnostics
	// Findings are lint findings, as lint.Run sorted them.
	Findings []Finding
	// Files are the parsed sources for snippets (spec.Config.Files, plus
	// the .gpuform-lint.hcl file when one was read).
	Files map[string]*hcl.File
	// Text holds colour and width for the text format.
	Text TextOptions
	// SARIF holds the base directory, tool version and rules for SARIF.
	SARIF SARIFOptions
}

// Write renders in as format f.
func Write(w io.Writer, f Format, in Input) error {
	switch f {
	case Text:
		return WriteText(w, in.Diags, in.Findings, in.Files, in.Text)
	case Compact:
		return WriteCompact(w, in.Diags, in.Findings)
	case JSON:
		return WriteJSON(w, in.Diags, in.Findings, in.Files)
	case SARIF:
		return WriteSARIF(w, in.Diags, in.Findings, in.SARIF)
	}
	return fmt.Errorf("unknown format %q", f)
}
