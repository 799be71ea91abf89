package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// explainModuleOutputs rewrites hcl's "This object does not have an
// attribute named" for a reference module.NAME.OUTPUT into one that names
// the module, suggests the nearest output and lists every output. It works
// on the evaluation's own diagnostics rather than checking references
// ahead, so that try(module.hw.gpu_nic, {}) stays the way to read an
// output a module may not have.
func explainModuleOutputs(diags hcl.Diagnostics, modules map[string]*ModuleCall) hcl.Diagnostics {
	for _, d := range diags {
		if d.Summary != "Unsupported attribute" || d.Subject == nil || d.EvalContext == nil {
			continue
		}
		te, ok := d.Expression.(*hclsyntax.ScopeTraversalExpr)
		if !ok || len(te.Traversal) < 3 || te.Traversal.RootName() != "module" {
			continue
		}
		name, out := attrName(te.Traversal[1]), attrName(te.Traversal[2])
		if name == "" || out == "" || te.Traversal[2].SourceRange() != *d.Subject {
			continue // a step past the output failed, not the output's name
		}
		all, ok := d.EvalContext.Variables["module"]
		if !ok {
			continue
		}
		all, _ = all.Unmark()
		if !all.Type().IsObjectType() || !all.Type().HasAttribute(name) {
			continue
		}
		mod, _ := all.GetAttr(name).Unmark()
		if !mod.Type().IsObjectType() {
			continue
		}
		names := slices.Sorted(maps.Keys(mod.Type().AttributeTypes()))
		source := ""
		// modules are the root's: a module's own call of a module by the
		// same name, in another file, has another source.
		if mc := modules[name]; mc != nil && mc.Source.Set && mc.DeclRange.Filename == d.Subject.Filename {
			source = fmt.Sprintf(" (%s)", mc.Source.V)
		}
		list := " It has no outputs."
		if len(names) > 0 {
			list = " Its outputs: " + strings.Join(names, ", ") + "."
		}
		d.Summary = "Unsupported module output"
		d.Detail = fmt.Sprintf("The module %q%s has no output named %q.%s%s", name, source, out, didYouMeanNames(out, names), list)
	}
	return diags
}
