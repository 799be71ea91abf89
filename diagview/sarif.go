package diagview

import (
	"encoding/json"
	"io"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// SARIF constants of the 2.1.0 standard (OASIS). The schema URI is the one
// GitHub code scanning documents for uploads.
const (
	sarifVersion = "2.1.0"
	sarifSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
	toolName     = "gpuform"
	toolInfoURI  = "https://github.com/gpuform/gpuform"
	// srcRootID names the base the artifact URIs are relative to.
	srcRootID = "SRCROOT"
)

// SARIFOptions set what the SARIF log says about its run.
type SARIFOptions struct {
	// BaseDir is the directory artifact URIs are made relative to, normally
	// the repository root (or the spec directory). Empty means the file
	// names are used as they are.
	BaseDir string
	// ToolVersion is gpuform's version, if known.
	ToolVersion string
	// Rules is the rule catalogue for tool.driver.rules (lint.Catalogue());
	// a finding of a rule not in it adds the rule.
	Rules []Rule
}

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool              sarifTool                        `json:"tool"`
	Invocations       []sarifInvocation                `json:"invocations"`
	OriginalURIBaseID map[string]sarifArtifactLocation `json:"originalUriBaseIds,omitempty"`
	Results           []sarifResult                    `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Version        string      `json:"version,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string             `json:"id"`
	Name                 string             `json:"name"`
	ShortDescription     sarifMessage       `json:"shortDescription"`
	HelpURI              string             `json:"helpUri,omitempty"`
	DefaultConfiguration sarifConfiguration `json:"defaultConfiguration"`
}

type sarifConfiguration struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
}

type sarifNotification struct {
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysicalLocation `json:"physicalLocation"`
}

type sarifPhysicalLocation struct {
	ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
	Region           *sarifRegion          `json:"region,omitempty"`
}

type sarifArtifactLocation struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn"`
	EndLine     int `json:"endLine"`
	EndColumn   int `json:"endColumn"`
}

// sarifLevel maps severities to SARIF result levels.
func sarifLevel(s Severity) string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "note"
}

// WriteSARIF writes a SARIF 2.1.0 log with one run: the rule catalogue as
// tool.driver.rules and each finding as a result. HCL diagnostics are not
// rule results; they are written as tool execution notifications, and an
// error among them marks the invocation as unsuccessful.
func WriteSARIF(w io.Writer, diags hcl.Diagnostics, findings []Finding, opts SARIFOptions) error {
	rules := opts.Rules
	idx := ruleIndex(rules)
	run := sarifRun{
		Tool: sarifTool{Driver: sarifDriver{
			Name:           toolName,
			InformationURI: toolInfoURI,
			Version:        opts.ToolVersion,
			Rules:          make([]sarifRule, 0, len(rules)),
		}},
		Results: []sarifResult{},
	}
	for _, r := range rules {
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{
			ID:                   r.Name,
			Name:                 r.Name,
			ShortDescription:     sarifMessage{Text: r.Summary},
			HelpURI:              helpURI(r.Link),
			DefaultConfiguration: sarifConfiguration{Level: sarifLevel(r.Severity)},
		})
	}
	inv := sarifInvocation{ExecutionSuccessful: !diags.HasErrors()}
	for _, d := range diags {
		if d == nil {
			continue
		}
		level := "warning"
		if d.Severity == hcl.DiagError {
			level = "error"
		}
		n := sarifNotification{Level: level, Message: sarifMessage{Text: joinMessage(d.Summary, d.Detail)}}
		if loc, ok := location(d.Subject, opts.BaseDir); ok {
			n.Locations = []sarifLocation{loc}
		}
		inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, n)
	}
	run.Invocations = []sarifInvocation{inv}
	for _, f := range findings {
		i, ok := idx[f.Rule]
		if !ok {
			// A finding of a rule outside the catalogue cannot reference it;
			// SARIF requires ruleIndex to be valid, so add the rule.
			i = len(run.Tool.Driver.Rules)
			idx[f.Rule] = i
			run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{ID: f.Rule, Name: f.Rule, ShortDescription: sarifMessage{Text: f.Summary}, HelpURI: helpURI(f.Link), DefaultConfiguration: sarifConfiguration{Level: sarifLevel(f.Severity)}})
		}
		res := sarifResult{RuleID: f.Rule, RuleIndex: i, Level: sarifLevel(f.Severity), Message: sarifMessage{Text: joinMessage(f.Summary, f.Detail)}}
		r := f.Range
		if loc, ok := location(&r, opts.BaseDir); ok {
			res.Locations = []sarifLocation{loc}
		}
		run.Results = append(run.Results, res)
	}
	if opts.BaseDir != "" {
		run.OriginalURIBaseID = map[string]sarifArtifactLocation{srcRootID: {URI: fileURI(opts.BaseDir)}}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(sarifLog{Schema: sarifSchema, Version: sarifVersion, Runs: []sarifRun{run}})
}

func joinMessage(summary, detail string) string {
	if detail == "" {
		return summary
	}
	return summary + "\n\n" + detail
}

// location converts a range to a SARIF physical location with a URI
// relative to baseDir, forward slashes, as code scanning expects.
func location(r *hcl.Range, baseDir string) (sarifLocation, bool) {
	if !hasFile(r) {
		return sarifLocation{}, false
	}
	name := r.Filename
	al := sarifArtifactLocation{}
	if baseDir != "" {
		if rel, err := filepath.Rel(baseDir, name); err == nil && !strings.HasPrefix(rel, "..") {
			name = rel
			al.URIBaseID = srcRootID
		}
	}
	al.URI = uriEscape(filepath.ToSlash(name))
	reg := &sarifRegion{StartLine: max(1, r.Start.Line), StartColumn: max(1, r.Start.Column), EndLine: max(1, r.End.Line), EndColumn: max(1, r.End.Column)}
	if reg.EndLine < reg.StartLine || (reg.EndLine == reg.StartLine && reg.EndColumn < reg.StartColumn) {
		reg.EndLine, reg.EndColumn = reg.StartLine, reg.StartColumn
	}
	return sarifLocation{PhysicalLocation: sarifPhysicalLocation{ArtifactLocation: al, Region: reg}}, true
}

// uriEscape escapes the characters that may not appear in a URI reference
// path; file names in specs are plain, so this is rarely more than spaces.
func uriEscape(p string) string {
	var b strings.Builder
	for _, c := range []byte(p) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"%<>\^`+"`{|}#?[]", c) >= 0 {
			b.WriteString("%" + strings.ToUpper(hex2(c)))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}

// fileURI turns a directory into an absolute file:// URI ending in "/", as
// SARIF requires for originalUriBaseIds.
func fileURI(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	u := uriEscape(filepath.ToSlash(abs))
	if !strings.HasPrefix(u, "/") {
		u = "/" + u
	}
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return "file://" + u
}

// helpURI makes the rule link absolute so code-scanning UIs can open it:
// repository-relative links point at the docs in gpuform's repository.
func helpURI(link string) string {
	if link == "" || strings.Contains(link, "://") {
		return link
	}
	return toolInfoURI + "/blob/main/" + link
}
