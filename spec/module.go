package spec

import (
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// BuiltinModulePrefix marks module sources shipped inside the binary.
const BuiltinModulePrefix = "gpuform/"

// builtinFilePrefix starts the file names of built-in modules' files
// ("gpuform://hgx-h100-8gpu/hardware.gpuform.hcl"). A cleaned path on disk
// never holds "//", so a local copy vendored under ./gpuform/NAME cannot
// share a name with the built-in, which matters because the HCL parser
// caches files by name.
const builtinFilePrefix = "gpuform:/"

// maxModuleDepth bounds module nesting; real specs use one or two levels.
const maxModuleDepth = 8

// evalModule loads a module call's source, hands it its inputs and returns
// the object of its outputs, which module.NAME stands for.
func (e *evaluator) evalModule(b *hcl.Block) (*ModuleCall, cty.Value, hcl.Diagnostics) {
	mc := &ModuleCall{Name: b.Labels[0], DeclRange: b.DefRange, Outputs: map[string]cty.Value{}}
	attrs, diags := b.Body.JustAttributes()
	src, ok := attrs["source"]
	if !ok {
		return mc, cty.DynamicVal, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing required argument",
			Detail:   "A module block needs a source: \"gpuform/NAME\" for a built-in module or a relative path like \"./modules/rack\".",
			Subject:  b.DefRange.Ptr(),
		})
	}
	delete(attrs, "source")
	source, d := literalString(src)
	diags = append(diags, d...)
	if d.HasErrors() {
		return mc, cty.DynamicVal, diags
	}
	mc.Source = Attr[string]{V: source, Set: true, Range: src.Expr.Range()}

	reader, dir, key, d := e.ld.moduleLocation(source, src.Expr.Range())
	diags = append(diags, d...)
	if d.HasErrors() {
		return mc, cty.DynamicVal, diags
	}
	for _, prev := range e.ld.sourceChain {
		if prev == key {
			return mc, cty.DynamicVal, append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Module includes itself",
				Detail:   fmt.Sprintf("The module %s calls itself through %s.", source, strings.Join(append(e.ld.sourceChain, key), " → ")),
				Subject:  src.Expr.Range().Ptr(),
			})
		}
	}
	if e.ld.depth >= maxModuleDepth {
		return mc, cty.DynamicVal, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Modules nested too deeply",
			Detail:   fmt.Sprintf("Modules may be nested at most %d levels.", maxModuleDepth),
			Subject:  src.Expr.Range().Ptr(),
		})
	}
	if d := e.ld.limits().countModule(src.Expr.Range()); d.HasErrors() {
		return mc, cty.DynamicVal, append(diags, d...)
	}
	sources, err := reader.readDir(dir)
	if err != nil && strings.HasPrefix(source, BuiltinModulePrefix) {
		// The embedded file system's "open NAME: file does not exist" says
		// nothing the user can act on: the name is simply not shipped.
		return mc, cty.DynamicVal, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unknown built-in module",
			Detail:   fmt.Sprintf("%q is not a module shipped with gpuform.%s", source, e.ld.builtinHint(source)),
			Subject:  src.Expr.Range().Ptr(),
		})
	}
	if err != nil || len(sources) == 0 {
		why := "it holds no *" + SpecFileSuffix + " files"
		if err != nil {
			why = err.Error()
		}
		return mc, cty.DynamicVal, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cannot load module",
			Detail:   fmt.Sprintf("The module source %q cannot be read: %s.%s", source, why, e.ld.builtinHint(source)),
			Subject:  src.Expr.Range().Ptr(),
		})
	}

	if d := e.ld.limits().readSources(sources, source); d.HasErrors() {
		return mc, cty.DynamicVal, append(diags, d...)
	}
	child := &loader{
		budget:      e.ld.limits(),
		cfg:         emptyConfig(dir),
		opts:        e.ld.opts,
		reader:      reader,
		parser:      e.ld.parser,
		depth:       e.ld.depth + 1,
		sourceChain: append(append([]string(nil), e.ld.sourceChain...), key),
	}
	var files []*hcl.File
	for _, n := range slices.Sorted(maps.Keys(sources)) {
		if d := CheckNesting(sources[n], n); d.HasErrors() {
			diags = append(diags, d...)
			continue
		}
		f, d := child.parser.ParseHCL(sources[n], n)
		diags = append(diags, d...)
		if f != nil {
			bounds(f.Body)
			files = append(files, f)
		}
	}
	diags = append(diags, child.decodeFiles(files, false)...)
	diags = append(diags, child.resolveVariables(nil)...)

	// Inputs: every other argument of the module block sets a variable.
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		a := attrs[name]
		v, declared := child.cfg.Variables[name]
		if !declared {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unsupported argument",
				Detail:   fmt.Sprintf("The module %s has no input variable named %q.%s", source, name, didYouMeanSuffix(name, slices.Sorted(maps.Keys(child.cfg.Variables)))),
				Subject:  a.NameRange.Ptr(),
			})
			continue
		}
		val, d := e.evalExpr(a.Expr)
		diags = append(diags, d...)
		if d.HasErrors() {
			v.Value = cty.UnknownVal(v.Type)
			continue
		}
		conv, err := convert.Convert(val, v.Type)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid value for module argument",
				Detail:   fmt.Sprintf("The module's variable %q needs %s: %s.", name, v.Type.FriendlyName(), err),
				Subject:  a.Expr.Range().Ptr(),
			})
			// Unknown, not unset: the argument is there, and a second
			// error calling it missing would send the reader astray.
			v.Value = cty.UnknownVal(v.Type)
			continue
		}
		v.Value, v.ValueSource = conv, "module "+mc.Name
	}
	for _, name := range slices.Sorted(maps.Keys(child.cfg.Variables)) {
		v := child.cfg.Variables[name]
		if v.Value == cty.NilVal {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing required argument",
				Detail:   fmt.Sprintf("The module %s needs a value for %q, which has no default.", source, name),
				Subject:  b.DefRange.Ptr(),
			})
			v.Value = cty.UnknownVal(v.Type)
		}
	}
	diags = append(diags, child.validateVariables()...)
	diags = append(diags, child.evaluate()...)
	mc.Config = child.cfg
	child.cfg.Files = nil // the root config holds every file

	outs := map[string]cty.Value{}
	for name, o := range child.cfg.Outputs {
		v := o.Value
		if v == cty.NilVal {
			v = cty.DynamicVal
		}
		outs[name] = v
		mc.Outputs[name] = v
	}
	return mc, cty.ObjectVal(outs), diags
}

// moduleLocation resolves a source string to a reader and directory, plus a
// key that identifies the module for cycle detection.
func (ld *loader) moduleLocation(source string, rng hcl.Range) (fileReader, string, string, hcl.Diagnostics) {
	switch {
	case strings.HasPrefix(source, BuiltinModulePrefix):
		name := strings.TrimPrefix(source, BuiltinModulePrefix)
		if ld.opts.BuiltinModules == nil || !fs.ValidPath(name) || strings.Contains(name, "/") || name == "" {
			return nil, "", "", hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Unknown built-in module",
				Detail:   fmt.Sprintf("%q is not a module shipped with gpuform.%s", source, ld.builtinHint(source)),
				Subject:  rng.Ptr(),
			}}
		}
		return fsReader{fsys: ld.opts.BuiltinModules, prefix: builtinFilePrefix}, name, source, nil
	case strings.HasPrefix(source, "./") || strings.HasPrefix(source, "../"):
		if r, ok := ld.reader.(fsReader); ok {
			// A built-in module refers to a sibling inside the binary.
			dir := path.Clean(path.Join(ld.cfg.Dir, source))
			return r, dir, "gpuform/" + dir, nil
		}
		dir := filepath.Clean(filepath.Join(ld.cfg.Dir, source))
		abs, err := filepath.Abs(dir)
		if err != nil {
			abs = dir
		}
		return osReader{}, dir, abs, nil
	}
	return nil, "", "", hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Invalid module source",
		Detail:   fmt.Sprintf("%q is neither a built-in module (\"gpuform/NAME\") nor a relative path (\"./modules/NAME\"). gpuform does not download modules.", source),
		Subject:  rng.Ptr(),
	}}
}

// builtinHint lists the built-in modules when a gpuform/ source is wrong.
func (ld *loader) builtinHint(source string) string {
	if ld.opts.BuiltinModules == nil || !strings.HasPrefix(source, BuiltinModulePrefix) {
		return ""
	}
	entries, err := fs.ReadDir(ld.opts.BuiltinModules, ".")
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, BuiltinModulePrefix+e.Name())
		}
	}
	sort.Strings(names)
	// Match on the bare names: the shared prefix would make every
	// built-in module look a few edits away from any typo.
	bare := make([]string, len(names))
	for i, n := range names {
		bare[i] = strings.TrimPrefix(n, BuiltinModulePrefix)
	}
	var hint string
	if near := nearestNames(strings.TrimPrefix(source, BuiltinModulePrefix), bare); len(near) > 0 {
		for i := range near {
			near[i] = BuiltinModulePrefix + near[i]
		}
		hint = didYouMean(near)
	}
	return hint + " Built-in modules: " + strings.Join(names, ", ") + "."
}
