package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// evaluator resolves named values (local, inventory, module) on demand,
// memoising each one and refusing cycles, so a spec may declare things in any
// order and across files, as in Terraform.
type evaluator struct {
	ld       *loader
	funcs    map[string]function.Function
	memo     map[string]cty.Value
	visiting []string
}

// referenceKinds are the roots of references between top-level objects.
var referenceKinds = map[string]string{
	"var":       "input variable",
	"local":     "local value",
	"inventory": "inventory",
	"module":    "module",
}

func (ld *loader) evaluate() hcl.Diagnostics {
	var diags hcl.Diagnostics
	ld.eval = &evaluator{ld: ld, funcs: ld.boundedFunctions(), memo: map[string]cty.Value{}}
	e := ld.eval
	for _, name := range slices.Sorted(maps.Keys(ld.localDecls)) {
		_, d := e.resolve("local", name, nil)
		diags = append(diags, d...)
	}
	for _, name := range slices.Sorted(maps.Keys(ld.inventoryDecls)) {
		_, d := e.resolve("inventory", name, nil)
		diags = append(diags, d...)
	}
	for _, name := range slices.Sorted(maps.Keys(ld.moduleDecls)) {
		_, d := e.resolve("module", name, nil)
		diags = append(diags, d...)
	}
	for _, name := range slices.Sorted(maps.Keys(ld.cfg.Outputs)) {
		o := ld.cfg.Outputs[name]
		if o.Expr == nil {
			continue
		}
		v, d := e.evalExpr(o.Expr)
		diags = append(diags, d...)
		if o.Sensitive {
			v = markSensitive(v)
		}
		o.Value = v
	}
	if len(ld.nodeBlocks) > 0 {
		var used []hcl.Traversal
		for _, b := range ld.nodeBlocks {
			used = append(used, bodyTraversals(b.Body)...)
		}
		ctx, d := e.fullContext(used)
		diags = append(diags, d...)
		for _, b := range ld.nodeBlocks {
			n, d := decodeNodeBlock(b, ctx)
			diags = append(diags, d...)
			if n != nil {
				ld.cfg.Nodes = append(ld.cfg.Nodes, n)
			}
		}
		diags = append(diags, hostsInOneNode(ld.cfg.Nodes)...)
	}
	return diags
}

// resolve returns the value of kind.name, computing it at most once.
// ref is the reference being followed, where a cycle is reported; it is
// nil for top-level evaluation.
func (e *evaluator) resolve(kind, name string, ref *hcl.Range) (cty.Value, hcl.Diagnostics) {
	addr := kind + "." + name
	if v, ok := e.memo[addr]; ok {
		return v, nil
	}
	for i, a := range e.visiting {
		if a == addr {
			chain := append(append([]string(nil), e.visiting[i:]...), addr)
			subject := e.declRange(kind, name)
			if ref != nil {
				subject = *ref
			}
			return cty.DynamicVal, hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Cycle in references",
				Detail:   fmt.Sprintf("These values refer to each other in a loop: %s. Break the loop by writing one of them without the others.", strings.Join(chain, " → ")),
				Subject:  subject.Ptr(),
			}}
		}
	}
	e.visiting = append(e.visiting, addr)
	var v cty.Value
	var diags hcl.Diagnostics
	switch kind {
	case "local":
		a := e.ld.localDecls[name]
		v, diags = e.evalExpr(a.Expr)
		e.ld.cfg.Locals[name] = &Local{Name: name, Expr: a.Expr, Value: v, DeclRange: a.Range}
	case "inventory":
		var inv *Inventory
		inv, v, diags = e.evalInventory(e.ld.inventoryDecls[name])
		e.ld.cfg.Inventories[name] = inv
	case "module":
		var mc *ModuleCall
		mc, v, diags = e.evalModule(e.ld.moduleDecls[name])
		e.ld.cfg.Modules[name] = mc
	}
	e.visiting = e.visiting[:len(e.visiting)-1]
	if diags.HasErrors() && v == cty.NilVal {
		v = cty.DynamicVal
	}
	e.memo[addr] = v
	return v, diags
}

// evalValue is the variable's value as expressions see it: marked when
// the variable is sensitive, so that everything computed from it is too.
func (v *Variable) evalValue() cty.Value {
	if v.Value == cty.NilVal {
		return cty.DynamicVal
	}
	if v.Sensitive {
		return markSensitive(v.Value)
	}
	return v.Value
}

func (e *evaluator) declRange(kind, name string) hcl.Range {
	switch kind {
	case "local":
		return e.ld.localDecls[name].NameRange
	case "inventory":
		return e.ld.inventoryDecls[name].DefRange
	case "module":
		return e.ld.moduleDecls[name].DefRange
	}
	return hcl.Range{}
}

func (e *evaluator) declared(kind, name string) bool {
	switch kind {
	case "var":
		_, ok := e.ld.cfg.Variables[name]
		return ok
	case "local":
		_, ok := e.ld.localDecls[name]
		return ok
	case "inventory":
		_, ok := e.ld.inventoryDecls[name]
		return ok
	case "module":
		_, ok := e.ld.moduleDecls[name]
		return ok
	}
	return false
}

func (e *evaluator) declaredNames(kind string) []string {
	switch kind {
	case "var":
		return slices.Sorted(maps.Keys(e.ld.cfg.Variables))
	case "local":
		return slices.Sorted(maps.Keys(e.ld.localDecls))
	case "inventory":
		return slices.Sorted(maps.Keys(e.ld.inventoryDecls))
	case "module":
		return slices.Sorted(maps.Keys(e.ld.moduleDecls))
	}
	return nil
}

// contextFor builds an evaluation context holding just the values the given
// traversals name, resolving each on demand.
func (e *evaluator) contextFor(traversals []hcl.Traversal) (*hcl.EvalContext, hcl.Diagnostics) {
	objs, diags := e.referencedValues(traversals)
	return e.buildContext(objs), diags
}

// referencedValues resolves the values the traversals name. Undeclared
// names get an unknown placeholder, so that hcl does not report them a
// second time, less helpfully, as "Unsupported attribute".
func (e *evaluator) referencedValues(traversals []hcl.Traversal) (map[string]map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	objs := map[string]map[string]cty.Value{}
	for kind := range referenceKinds {
		objs[kind] = map[string]cty.Value{}
	}
	for _, tr := range traversals {
		kind := tr.RootName()
		what, ok := referenceKinds[kind]
		if !ok {
			continue // hcl reports unknown roots itself, with suggestions
		}
		if len(tr) < 2 || attrName(tr[1]) == "" {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid reference",
				Detail:   fmt.Sprintf("A reference to a %s is written %s.NAME.", what, kind),
				Subject:  tr.SourceRange().Ptr(),
			})
			objs[kind]["__invalid"] = cty.DynamicVal
			continue
		}
		name := attrName(tr[1])
		if _, done := objs[kind][name]; done {
			continue
		}
		if !e.declared(kind, name) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Reference to undeclared %s", what),
				Detail:   fmt.Sprintf("No %s named %q is declared.%s", what, name, didYouMeanSuffix(name, e.declaredNames(kind))),
				Subject:  tr.SourceRange().Ptr(),
			})
			objs[kind][name] = cty.DynamicVal
			continue
		}
		var v cty.Value
		var d hcl.Diagnostics
		if kind == "var" {
			v = e.ld.cfg.Variables[name].evalValue()
		} else {
			rng := tr.SourceRange()
			v, d = e.resolve(kind, name, &rng)
		}
		diags = append(diags, d...)
		objs[kind][name] = v
	}
	return objs, diags
}

func (e *evaluator) buildContext(objs map[string]map[string]cty.Value) *hcl.EvalContext {
	vars := map[string]cty.Value{
		"path": cty.ObjectVal(map[string]cty.Value{
			"root": cty.StringVal(e.ld.rootDir()),
			"spec": cty.StringVal(e.ld.cfg.Dir),
		}),
	}
	for kind, m := range objs {
		vars[kind] = cty.ObjectVal(m)
	}
	return &hcl.EvalContext{Variables: vars, Functions: e.funcs}
}

// fullContext resolves every named value, for node bodies, which may use
// anything and which nothing refers to.
func (e *evaluator) fullContext(used []hcl.Traversal) (*hcl.EvalContext, hcl.Diagnostics) {
	objs, diags := e.referencedValues(used)
	for name, v := range e.ld.cfg.Variables {
		objs["var"][name] = v.evalValue()
	}
	for _, kind := range []string{"local", "inventory", "module"} {
		for _, name := range e.declaredNames(kind) {
			v, d := e.resolve(kind, name, nil)
			diags = append(diags, d...)
			objs[kind][name] = v
		}
	}
	return e.buildContext(objs), diags
}

func (e *evaluator) evalExpr(expr hcl.Expression) (cty.Value, hcl.Diagnostics) {
	ctx, diags := e.contextFor(expr.Variables())
	v, d := expr.Value(ctx)
	diags = append(diags, d...)
	if d := checkValue(v, expr.Range()); d.HasErrors() {
		return cty.DynamicVal, append(diags, d...)
	}
	return v, diags
}

// bodyContext is contextFor over every attribute of a body.
func (e *evaluator) bodyContext(attrs hcl.Attributes) (*hcl.EvalContext, hcl.Diagnostics) {
	var trs []hcl.Traversal
	for _, a := range attrs {
		trs = append(trs, a.Expr.Variables()...)
	}
	return e.contextFor(trs)
}

func (ld *loader) rootDir() string {
	return ld.cfg.Dir
}

// bodyTraversals lists every variable reference inside a body, nested blocks
// included.
func bodyTraversals(body hcl.Body) []hcl.Traversal {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	var out []hcl.Traversal
	_ = hclsyntax.VisitAll(sb, func(n hclsyntax.Node) hcl.Diagnostics {
		if ex, ok := n.(hclsyntax.Expression); ok {
			if st, ok := ex.(*hclsyntax.ScopeTraversalExpr); ok {
				out = append(out, st.Traversal)
			}
		}
		return nil
	})
	return out
}
