package spec

import (
	"github.com/hashicorp/hcl/v2"
)

var outputBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "value", Required: true},
		{Name: "description"},
		{Name: "sensitive"},
	},
}

func decodeOutputBlock(b *hcl.Block) (*Output, hcl.Diagnostics) {
	o := &Output{Name: b.Labels[0], DeclRange: b.DefRange}
	content, diags := b.Body.Content(outputBlockSchema)
	if a, ok := content.Attributes["value"]; ok {
		o.Expr = a.Expr
	}
	if a, ok := content.Attributes["description"]; ok {
		s, d := literalString(a)
		diags = append(diags, d...)
		o.Description = s
	}
	if a, ok := content.Attributes["sensitive"]; ok {
		v, d := literalBool(a)
		diags = append(diags, d...)
		o.Sensitive = v
	}
	return o, diags
}
