package spec

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// NumberVersionSummary is the summary of the error for a version written as
// a number (version = 12.10), which HCL reads as 12.1.
const NumberVersionSummary = "Version must be a string"

// numberVersion rides on a NumberVersionSummary diagnostic until the load
// has every file's bytes: the quoted form to suggest is the text the author
// typed, which the number value no longer holds (12.10 is 12.1 by then).
type numberVersion struct {
	attr      string
	value     string // the number as HCL holds it
	expr      hcl.Expression
	sensitive bool
}

func numberVersionDiag(attr string, v cty.Value, expr hcl.Expression, sensitive bool) *hcl.Diagnostic {
	nv := numberVersion{attr: attr, value: v.AsBigFloat().Text('f', -1), expr: expr, sensitive: sensitive}
	d := &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  NumberVersionSummary,
		Subject:  expr.Range().Ptr(),
		Extra:    nv,
	}
	d.Detail = nv.detail("", "")
	return d
}

// numberLiteral is the shape of an HCL number literal as a version author
// writes one; anything else is not offered back as the quoted form.
var numberLiteral = lazyre.New(`^[0-9]{1,6}(\.[0-9]{1,6}){0,3}$`)

// detail says what to write. written is the source text of the number
// (empty when unknown); via names the variable it came through.
func (nv numberVersion) detail(written, via string) string {
	if nv.sensitive {
		return fmt.Sprintf("Write %s as a quoted string: HCL reads an unquoted version as a number, and a number can lose digits (12.10 becomes 12.1).", nv.attr)
	}
	if via != "" && written == "" {
		return fmt.Sprintf("%s is the number %s: write its value as a quoted string where it is set; HCL reads an unquoted version as a number, and a number can lose digits (12.10 becomes 12.1).", via, nv.value)
	}
	if written == "" {
		written = nv.value
	}
	lost := fmt.Sprintf("HCL reads %s as the number %s.", written, nv.value)
	if written == nv.value {
		lost = fmt.Sprintf("HCL reads %s as a number, and a number can lose digits (12.10 becomes 12.1).", written)
	}
	if via != "" {
		return fmt.Sprintf("%s is the number %s: write its value as %q (quoted) where it is set. %s", via, nv.value, written, lost)
	}
	return fmt.Sprintf("Write %s = %q (quoted): %s", nv.attr, written, lost)
}

// explainNumberVersions fills in the text the author wrote for each version
// given as a number, read from the source bytes of the expression (or of
// the variable default it came from).
func explainNumberVersions(diags hcl.Diagnostics, files map[string]*hcl.File, vars map[string]*Variable) hcl.Diagnostics {
	for _, d := range diags {
		nv, ok := d.Extra.(numberVersion)
		if !ok {
			continue
		}
		d.Extra = nil
		switch e := nv.expr.(type) {
		case *hclsyntax.LiteralValueExpr:
			d.Detail = nv.detail(sourceText(files, e.Range()), "")
		case *hclsyntax.ScopeTraversalExpr:
			if len(e.Traversal) != 2 || e.Traversal.RootName() != "var" {
				continue
			}
			name := attrName(e.Traversal[1])
			v, ok := vars[name]
			if !ok {
				continue
			}
			written := ""
			if v.ValueSource == "default" && v.DefaultRange != nil {
				written = sourceText(files, *v.DefaultRange)
			}
			d.Detail = nv.detail(written, "var."+name)
		}
	}
	return diags
}

// sourceText is the text of rng when it is a plain number literal, or "".
func sourceText(files map[string]*hcl.File, rng hcl.Range) string {
	f, ok := files[rng.Filename]
	if !ok || rng.Start.Byte < 0 || rng.End.Byte > len(f.Bytes) || rng.Start.Byte >= rng.End.Byte {
		return ""
	}
	text := string(f.Bytes[rng.Start.Byte:rng.End.Byte])
	if !numberLiteral.MatchString(text) {
		return ""
	}
	return text
}

// LossyNumberSummary is the summary of the error for a string variable
// whose default is written as a number that loses digits (12.10 → "12.1").
const LossyNumberSummary = "Number loses digits"

// checkLossyStringDefaults refuses a string variable whose default is an
// unquoted number HCL does not read back as written: type = string with
// default = 12.10 holds "12.1", and a version taken from it would install
// another release. A number that survives (12.4, 550) is left alone.
func checkLossyStringDefaults(files map[string]*hcl.File, vars map[string]*Variable) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, name := range sortedVariableNames(vars) {
		v := vars[name]
		if v.DefaultRange == nil || !v.Type.Equals(cty.String) || v.Sensitive {
			continue
		}
		d, _ := v.Default.Unmark()
		if d.IsNull() || !d.IsKnown() || !d.Type().Equals(cty.String) {
			continue
		}
		written := sourceText(files, *v.DefaultRange)
		if written == "" || written == d.AsString() {
			continue
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  LossyNumberSummary,
			Detail:   fmt.Sprintf("Write default = %q (quoted): variable %q is a string, and HCL reads %s as the number %s.", written, name, written, d.AsString()),
			Subject:  v.DefaultRange.Ptr(),
		})
	}
	return diags
}

func sortedVariableNames(vars map[string]*Variable) []string {
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
