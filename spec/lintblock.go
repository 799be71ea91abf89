package spec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// LintConfigFile is the name of the per-directory lint configuration.
const LintConfigFile = ".gpuform-lint.hcl"

var lintBlockSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "rule", LabelNames: []string{"name"}}},
}

var lintRuleSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "enabled"}, {Name: "severity"}},
}

// lintFileSchema names rule too, only to say where a tflint-style
// top-level rule block goes.
var lintFileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "lint"}, {Type: "rule", LabelNames: []string{"name"}}},
}

// DecodeLintBlock decodes a lint block. Rule names are not checked here:
// spec does not know the rules, so lint reports unknown names itself.
func DecodeLintBlock(b *hcl.Block) (*LintConfig, hcl.Diagnostics) {
	lc := &LintConfig{DeclRange: b.DefRange}
	content, diags := b.Body.Content(lintBlockSchema)
	seen := map[string]hcl.Range{}
	for _, rb := range content.Blocks {
		// Two blocks for one rule would leave which one wins to the
		// reader's guess.
		if prev, dup := seen[rb.Labels[0]]; dup {
			d := duplicateDiag("rule", rb.Labels[0], rb.LabelRanges[0], prev)
			d.Detail = fmt.Sprintf("The rule %q is already configured at %s; merge the two blocks.", rb.Labels[0], prev)
			diags = append(diags, d)
			continue
		}
		seen[rb.Labels[0]] = rb.DefRange
		rc := &LintRuleConfig{Name: rb.Labels[0], NameRange: rb.LabelRanges[0]}
		rcontent, d := rb.Body.Content(lintRuleSchema)
		diags = append(diags, d...)
		if a, ok := rcontent.Attributes["enabled"]; ok {
			v, d := literalBool(a)
			diags = append(diags, d...)
			rc.Enabled = Attr[bool]{V: v, Set: !d.HasErrors(), Range: a.Expr.Range()}
		}
		if a, ok := rcontent.Attributes["severity"]; ok {
			s, d := literalString(a)
			diags = append(diags, d...)
			if !d.HasErrors() {
				switch s {
				case "error", "warning", "info":
					rc.Severity = Attr[string]{V: s, Set: true, Range: a.Expr.Range()}
				default:
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Invalid severity",
						Detail:   fmt.Sprintf("%q is not a severity; use \"error\", \"warning\" or \"info\".", s),
						Subject:  a.Expr.Range().Ptr(),
					})
				}
			}
		}
		lc.Rules = append(lc.Rules, rc)
	}
	return lc, diags
}

// LoadLintFile reads a .gpuform-lint.hcl file: one top-level lint block.
// It returns the parsed file too, so that its diagnostics can show snippets.
func LoadLintFile(path string) (*LintConfig, *hcl.File, hcl.Diagnostics) {
	src, err := readSpecFile(path)
	if err != nil {
		return nil, nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Cannot read lint configuration",
			Detail:   err.Error(),
		}}
	}
	if d := CheckNesting(src, path); d.HasErrors() {
		return nil, nil, d
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if f == nil || diags.HasErrors() {
		return nil, f, diags
	}
	bounds(f.Body)
	content, d := f.Body.Content(lintFileSchema)
	diags = append(diags, d...)
	var lc *LintConfig
	var first *hcl.Block
	for _, b := range content.Blocks {
		if b.Type == "rule" {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Rule block outside lint",
				Detail:   fmt.Sprintf("Unlike tflint's .tflint.hcl, a gpuform lint configuration keeps its rule blocks inside one lint block: lint { rule %q { ... } }.", b.Labels[0]),
				Subject:  b.DefRange.Ptr(),
			})
			continue
		}
		if first != nil {
			diags = append(diags, duplicateDiag("lint", "", b.DefRange, first.DefRange))
			continue
		}
		first = b
		c, d := DecodeLintBlock(b)
		diags = append(diags, d...)
		lc = c
	}
	return lc, f, diags
}
