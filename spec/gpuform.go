package spec

import (
	"fmt"
	"path/filepath"
	"strings"

	goversion "github.com/hashicorp/go-version"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/gpuform/gpuform/internal/lazyre"
)

var gpuformBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "required_version"}, {Name: "name"}},
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

func (ld *loader) decodeGpuformBlock(b *hcl.Block, root bool) hcl.Diagnostics {
	content, diags := b.Body.Content(gpuformBlockSchema)
	if a, ok := content.Attributes["name"]; ok {
		diags = append(diags, ld.decodeSpecName(a, root)...)
	}
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

// specNamePattern is what a spec name may be: it is written into the
// owner records and file headers on every host, so it stays one plain word.
var specNamePattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// decodeSpecName reads gpuform { name }, the name under which the spec's
// resources are recorded on each host. Only the root spec names itself: a
// module's resources belong to the spec that calls it.
func (ld *loader) decodeSpecName(a *hcl.Attribute, root bool) hcl.Diagnostics {
	if !root {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Spec name in a module",
			Detail:   "A module's resources are managed by the spec that calls it; set name in the calling spec's gpuform block.",
			Subject:  a.NameRange.Ptr(),
		}}
	}
	v, diags := a.Expr.Value(staticContext())
	if diags.HasErrors() {
		return diags
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String || !specNamePattern.MatchString(v.AsString()) {
		shown := "this value"
		if v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
			shown = fmt.Sprintf("%q", v.AsString())
		}
		return append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid spec name",
			Detail:   fmt.Sprintf("The spec name is recorded on every host as the owner of what this spec manages; %s is not one. Use 1 to 64 letters, digits, dots, underscores and dashes, starting with a letter or digit, such as \"hgx-training\".", shown),
			Subject:  a.Expr.Range().Ptr(),
		})
	}
	if ld.cfg.Name.Set {
		return append(diags, duplicateDiag("spec name", v.AsString(), a.NameRange, ld.cfg.Name.Range))
	}
	ld.cfg.Name = Attr[string]{V: v.AsString(), Set: true, Range: a.Expr.Range()}
	return diags
}

// DefaultSpecName is the spec name used when gpuform { name } is not
// written: the spec directory's base name, with anything a name cannot hold
// replaced by dashes.
func DefaultSpecName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	name := strings.Trim(nonNameChars.ReplaceAllString(filepath.Base(abs), "-"), "-._")
	if len(name) > 64 {
		name = name[:64]
	}
	if !specNamePattern.MatchString(name) {
		return "spec"
	}
	return name
}

var nonNameChars = lazyre.New(`[^A-Za-z0-9._-]+`)
