package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// hclSyntaxValueDiag reports a -var or GPUFORM_VAR_ value for a list, set,
// map or object variable that is not written in HCL syntax, as Terraform's
// users write -var hosts=gpu001 for a list: "Variables not allowed" from
// the expression parser says nothing about what to write instead.
func hclSyntaxValueDiag(v *Variable, raw, source string, rng hcl.Range) *hcl.Diagnostic {
	example := hclExample(v.Type, raw)
	how := fmt.Sprintf("-var '%s=%s'", v.Name, example)
	if strings.HasPrefix(source, "environment variable ") {
		how = fmt.Sprintf("%s%s='%s'", EnvVarPrefix, v.Name, example)
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Invalid value for variable",
		Detail: fmt.Sprintf("The value for var.%s from %s is not a valid %s. Values of collection and object variables are written in HCL syntax, quoted for the shell: %s.",
			v.Name, source, v.Type.FriendlyName(), how),
		Subject: rng.Ptr(),
	}
}

// hclExample writes raw as an HCL value of type ty where it can (a comma
// list becomes a list of its items), or a placeholder of that shape.
func hclExample(ty cty.Type, raw string) string {
	item := func(elem cty.Type, s string) string {
		if elem == cty.Number || elem == cty.Bool {
			return s
		}
		return fmt.Sprintf("%q", s)
	}
	switch {
	case ty.IsListType() || ty.IsSetType():
		var items []string
		for _, s := range strings.Split(strings.Trim(raw, "[]"), ",") {
			if s = strings.Trim(strings.TrimSpace(s), `"'`); s != "" {
				items = append(items, item(ty.ElementType(), s))
			}
		}
		if len(items) == 0 {
			items = []string{item(ty.ElementType(), "value")}
		}
		return "[" + strings.Join(items, ", ") + "]"
	case ty.IsTupleType():
		return "[...]"
	case ty.IsMapType():
		return fmt.Sprintf("{ key = %s }", item(ty.ElementType(), "value"))
	case ty.IsObjectType():
		var attrs []string
		for _, name := range slices.Sorted(maps.Keys(ty.AttributeTypes())) {
			attrs = append(attrs, fmt.Sprintf("%s = %s", name, item(ty.AttributeType(name), "...")))
		}
		return "{ " + strings.Join(attrs, ", ") + " }"
	}
	return raw
}
