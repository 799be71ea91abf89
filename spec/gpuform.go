package spec

import (
	"fmt"

	goversion "github.com/hashicorp/go-version"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

var gpuformBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "required_version"}},
}

// sniffSchema reads only gpuform blocks, leaving everything else for later,
// so a spec written for a newer gpuform fails on its version first.
var sniffSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "gpuform"}},
}

// checkRequiredVersion compares every required_version with the binary's.
func checkRequiredVersion(files []*hcl.File, binary string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	have, err := goversion.NewVersion(binary)
	if err != nil {
		// A development build ("dev") accepts any constraint.
		return nil
	}
	for _, f := range files {
		content, _, _ := f.Body.PartialContent(sniffSchema)
		if content == nil {
			continue
		}
		for _, b := range content.Blocks {
			attrs, _ := b.Body.JustAttributes()
			a, ok := attrs["required_version"]
			if !ok {
				continue
			}
			v, d := a.Expr.Value(staticContext())
			if d.HasErrors() || v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
				continue // decodeGpuformBlock reports it
			}
			cons, err := goversion.NewConstraint(v.AsString())
			if err != nil {
				continue
			}
			if !cons.Check(have.Core()) {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Unsupported gpuform version",
					Detail:   fmt.Sprintf("This spec requires gpuform %s, but this is gpuform %s. Install a matching release, or change required_version.", v.AsString(), binary),
					Subject:  a.Expr.Range().Ptr(),
				})
			}
		}
	}
	return diags
}

func (ld *loader) decodeGpuformBlock(b *hcl.Block) hcl.Diagnostics {
	content, diags := b.Body.Content(gpuformBlockSchema)
	a, ok := content.Attributes["required_version"]
	if !ok {
		return diags
	}
	v, d := a.Expr.Value(staticContext())
	diags = append(diags, d...)
	if d.HasErrors() {
		return diags
	}
	if v.Type() != cty.String || v.IsNull() {
		return append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid required_version",
			Detail:   "required_version is a version constraint string such as \">= 0.1\".",
			Subject:  a.Expr.Range().Ptr(),
		})
	}
	if _, err := goversion.NewConstraint(v.AsString()); err != nil {
		return append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid required_version",
			Detail:   fmt.Sprintf("%q is not a version constraint: %s. Write it like \">= 0.1\" or \"~> 0.2\".", v.AsString(), err),
			Subject:  a.Expr.Range().Ptr(),
		})
	}
	ld.cfg.RequiredVersion = &Attr[string]{V: v.AsString(), Set: true, Range: a.Expr.Range()}
	return diags
}
