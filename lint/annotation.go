package lint

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/spec"
)

// annotationPattern matches a suppression comment. The reason after "--" is
// free text; a "#" inside the comment also ends the rule list, as tflint
// allows ("# tflint-ignore: x # reason").
var annotationPattern = lazyre.New(`^(?:#|//)\s*gpuform-ignore:\s*([^\r\n]*)`)

// annotation is one gpuform-ignore comment.
type annotation struct {
	rules map[string]bool
	// file and line of the comment; it covers its own line and the next.
	file string
	line int
}

type annotations map[string][]annotation

// suppresses reports whether an annotation covers finding f: same file, on
// the finding's first line or on the line above it, naming its rule or "all".
func (as annotations) suppresses(f Finding) bool {
	for _, a := range as[f.Range.Filename] {
		if a.line != f.Range.Start.Line && a.line != f.Range.Start.Line-1 {
			continue
		}
		if a.rules[f.Rule] || a.rules["all"] {
			return true
		}
	}
	return false
}

// collectAnnotations lexes the comments of every file of the spec and of its
// modules (tflint's annotation.go approach: comment tokens, not regexps over
// raw text, so "#" inside a string is never mistaken for a comment).
func collectAnnotations(cfg *spec.Config, rules []Rule) (annotations, []Finding) {
	known := make(map[string]bool, len(rules)+1)
	names := make([]string, 0, len(rules))
	for _, r := range rules {
		known[r.Name] = true
		names = append(names, r.Name)
	}
	known["all"] = true

	files := map[string]*hcl.File{}
	gatherFiles(cfg, files, 0)
	fileNames := make([]string, 0, len(files))
	for name := range files {
		fileNames = append(fileNames, name)
	}
	sort.Strings(fileNames)

	as := annotations{}
	var findings []Finding
	for _, name := range fileNames {
		f := files[name]
		if f == nil || !bytes.Contains(f.Bytes, []byte("gpuform-ignore")) {
			continue
		}
		for _, tok := range commentTokens(f.Bytes, name) {
			a, fs := parseAnnotation(tok, known, names)
			findings = append(findings, fs...)
			if a != nil {
				as[name] = append(as[name], *a)
			}
		}
	}
	return as, findings
}

// gatherFiles collects the files of a config and of the modules it calls.
// depth bounds the walk in case a loader ever hands back a cyclic tree.
func gatherFiles(cfg *spec.Config, out map[string]*hcl.File, depth int) {
	if cfg == nil || depth > 32 {
		return
	}
	for name, f := range cfg.Files {
		if _, seen := out[name]; !seen {
			out[name] = f
		}
	}
	for _, m := range cfg.Modules {
		if m != nil {
			gatherFiles(m.Config, out, depth+1)
		}
	}
}

// parseAnnotation reads one comment token; it returns nil when the comment
// is not a suppression, and findings for rule names that do not exist.
func parseAnnotation(tok hclsyntax.Token, known map[string]bool, names []string) (*annotation, []Finding) {
	m := annotationPattern.FindSubmatchIndex(tok.Bytes)
	if m == nil {
		return nil, nil
	}
	list := string(tok.Bytes[m[2]:m[3]])
	listStart := m[2]
	if i := strings.Index(list, "--"); i >= 0 {
		list = list[:i]
	}
	if i := strings.Index(list, "#"); i >= 0 {
		list = list[:i]
	}
	a := &annotation{rules: map[string]bool{}, file: tok.Range.Filename, line: tok.Range.Start.Line}
	var findings []Finding
	offset := 0
	for _, part := range strings.Split(list, ",") {
		partStart := offset
		offset += len(part) + 1
		name := strings.TrimSpace(part)
		if name == "" {
			continue
		}
		a.rules[name] = true
		if known[name] {
			continue
		}
		// The comment is one line, so byte offsets within it are columns.
		col := listStart + partStart + strings.Index(part, name)
		rng := hcl.Range{
			Filename: tok.Range.Filename,
			Start:    hcl.Pos{Line: tok.Range.Start.Line, Column: tok.Range.Start.Column + col, Byte: tok.Range.Start.Byte + col},
			End:      hcl.Pos{Line: tok.Range.Start.Line, Column: tok.Range.Start.Column + col + len(name), Byte: tok.Range.Start.Byte + col + len(name)},
		}
		if now, ok := renamedRules()[name]; ok {
			a.rules[now] = true
			findings = append(findings, renamedFinding(name, now, rng))
			continue
		}
		findings = append(findings, Finding{
			Rule:     ruleUnknownRule,
			Severity: Warning,
			Summary:  fmt.Sprintf("Unknown lint rule %q in gpuform-ignore", name),
			Detail:   "This suppression silences nothing. " + suggestRule(name, names),
			Link:     DocsPath + "#" + ruleUnknownRule,
			Range:    rng,
		})
	}
	return a, findings
}

var ignoreMarker = []byte("gpuform-ignore")

// commentTokens returns the comment tokens that may hold a suppression.
// Lexing a large generated spec costs more than all rules together, so when
// the file has no heredoc and no block comment (the only constructs whose
// meaning spans lines) only the lines that mention gpuform-ignore are
// lexed, each with its true position; otherwise the whole file is.
func commentTokens(src []byte, filename string) []hclsyntax.Token {
	var out []hclsyntax.Token
	keep := func(tokens hclsyntax.Tokens) {
		for _, tok := range tokens {
			if tok.Type == hclsyntax.TokenComment && bytes.Contains(tok.Bytes, ignoreMarker) {
				out = append(out, tok)
			}
		}
	}
	if bytes.Contains(src, []byte("<<")) || bytes.Contains(src, []byte("/*")) {
		tokens, _ := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
		keep(tokens)
		return out
	}
	line, start := 1, 0
	for start <= len(src) {
		end := bytes.IndexByte(src[start:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += start
		}
		if bytes.Contains(src[start:end], ignoreMarker) {
			// Keep the newline: the lexer makes it part of a line comment.
			stop := min(end+1, len(src))
			tokens, _ := hclsyntax.LexConfig(src[start:stop], filename, hcl.Pos{Line: line, Column: 1, Byte: start})
			keep(tokens)
		}
		line++
		start = end + 1
	}
	return out
}
