package spec

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/gpuform/gpuform/internal/readlimit"
)

// EnvVarPrefix is the prefix of environment variables that set spec
// variables: GPUFORM_VAR_driver=550.127.08 sets var.driver.
const EnvVarPrefix = "GPUFORM_VAR_"

// VarArg is one -var or -var-file argument. They are applied in the order
// given on the command line, later ones winning, as Terraform does.
type VarArg struct {
	// File is true for -var-file.
	File bool
	// Value is "NAME=VALUE" for -var, or the file path for -var-file.
	Value string
}

var variableBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "type"},
		{Name: "default"},
		{Name: "description"},
		{Name: "sensitive"},
		{Name: "nullable"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "condition", Required: true},
		{Name: "error_message", Required: true},
	},
}

func decodeVariableBlock(b *hcl.Block) (*Variable, hcl.Diagnostics) {
	v := &Variable{Name: b.Labels[0], Type: cty.DynamicPseudoType, DeclRange: b.DefRange}
	var diags hcl.Diagnostics
	if !hclsyntax.ValidIdentifier(v.Name) {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid variable name",
			Detail:   fmt.Sprintf("%q is not a valid variable name: start with a letter and use letters, digits, underscores and dashes.", v.Name),
			Subject:  b.LabelRanges[0].Ptr(),
		})
		return nil, diags
	}
	content, d := b.Body.Content(variableBlockSchema)
	diags = append(diags, d...)
	var defaults *typeexpr.Defaults
	if a, ok := content.Attributes["type"]; ok {
		ty, def, d := typeexpr.TypeConstraintWithDefaults(a.Expr)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.Type, defaults = ty, def
		}
	}
	if a, ok := content.Attributes["default"]; ok {
		v.DefaultRange = a.Expr.Range().Ptr()
		val, d := a.Expr.Value(staticContext())
		diags = append(diags, d...)
		// A default that is there but wrong is unknown from here on, so
		// that no later error says the variable has no default.
		if d.HasErrors() {
			v.Default = cty.UnknownVal(v.Type)
		} else {
			if defaults != nil {
				val = defaults.Apply(val)
			}
			conv, err := convert.Convert(val, v.Type)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid default value for variable",
					Detail:   fmt.Sprintf("The default does not match the variable's type: %s.", err),
					Subject:  a.Expr.Range().Ptr(),
				})
				v.Default = cty.UnknownVal(v.Type)
			} else {
				v.Default = conv
			}
		}
	}
	if a, ok := content.Attributes["description"]; ok {
		s, d := literalString(a)
		diags = append(diags, d...)
		v.Description = s
	}
	if a, ok := content.Attributes["sensitive"]; ok {
		s, d := literalBool(a)
		diags = append(diags, d...)
		v.Sensitive = s
	}
	for _, vb := range content.Blocks {
		vc, d := vb.Body.Content(validationBlockSchema)
		diags = append(diags, d...)
		val := &VariableValidation{DeclRange: vb.DefRange}
		if a, ok := vc.Attributes["condition"]; ok {
			val.Condition = a.Expr
			for _, tr := range a.Expr.Variables() {
				// A condition with a reference it may not make is not
				// evaluated: that would only repeat the error in other words.
				if tr.RootName() != "var" || len(tr) < 2 || attrName(tr[1]) != v.Name {
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Invalid reference in variable validation",
						Detail:   fmt.Sprintf("A validation condition may refer only to the variable it validates, var.%s.", v.Name),
						Subject:  tr.SourceRange().Ptr(),
					})
					val.Condition = nil
				}
			}
		}
		if a, ok := vc.Attributes["error_message"]; ok {
			s, d := literalString(a)
			diags = append(diags, d...)
			val.ErrorMessage = s
		}
		if val.Condition != nil {
			v.Validations = append(v.Validations, val)
		}
	}
	return v, diags
}

func attrName(t hcl.Traverser) string {
	if a, ok := t.(hcl.TraverseAttr); ok {
		return a.Name
	}
	return ""
}

// resolveVariables applies every value source in Terraform's precedence:
// default < GPUFORM_VAR_ environment < *.auto.gpuvars.hcl (lexical order) <
// -var and -var-file in command-line order.
func (ld *loader) resolveVariables(autoFiles []*hcl.File) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, v := range ld.cfg.Variables {
		if v.Default != cty.NilVal {
			v.Value, v.ValueSource = v.Default, "default"
		}
	}
	if ld.depth > 0 {
		return diags // module variables come from the module block
	}
	// badValue names variables that were given a value that could not be
	// used; they already have an error, and "no value" would mislead.
	// badFile is set when a variables file could not be read at all, so
	// which variables it would have set is unknown.
	badValue := map[string]bool{}
	badFile := false
	envs := append([]string(nil), ld.opts.Environ...)
	sort.Strings(envs)
	for _, kv := range envs {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvVarPrefix) {
			continue
		}
		name := strings.TrimPrefix(k, EnvVarPrefix)
		v, declared := ld.cfg.Variables[name]
		if !declared {
			continue // like Terraform: the environment may hold values for other specs
		}
		d := ld.setFromString(v, val, "environment variable "+k, v.DeclRange)
		if d.HasErrors() {
			badValue[name] = true
		}
		diags = append(diags, d...)
	}
	for _, f := range autoFiles {
		diags = append(diags, ld.applyVarsFile(f, badValue)...)
	}
	for _, arg := range ld.opts.VarArgs {
		if arg.File {
			src, err := readlimit.ReadFile(arg.Value, MaxFileSize)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Cannot read variables file",
					Detail:   fmt.Sprintf("-var-file=%s: %s", arg.Value, err),
				})
				badFile = true
				continue
			}
			if d := CheckNesting(src, arg.Value); d.HasErrors() {
				diags = append(diags, d...)
				badFile = true
				continue
			}
			f, d := ld.parser.ParseHCL(src, arg.Value)
			diags = append(diags, d...)
			if f != nil {
				bounds(f.Body)
			}
			if f != nil && !d.HasErrors() {
				diags = append(diags, ld.applyVarsFile(f, badValue)...)
			} else {
				badFile = true
			}
			continue
		}
		name, val, ok := strings.Cut(arg.Value, "=")
		if !ok || name == "" {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid -var option",
				Detail:   fmt.Sprintf("The -var option takes NAME=VALUE; got %q.", arg.Value),
			})
			badValue[arg.Value] = true
			continue
		}
		v, declared := ld.cfg.Variables[name]
		if !declared {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Value for undeclared variable",
				Detail:   fmt.Sprintf("-var sets %q, but the spec declares no variable of that name.%s", name, didYouMeanSuffix(name, variableNames(ld.cfg.Variables))),
			})
			continue
		}
		d := ld.setFromString(v, val, "-var "+name, v.DeclRange)
		if d.HasErrors() {
			badValue[name] = true
		}
		diags = append(diags, d...)
	}
	for _, name := range slices.Sorted(maps.Keys(ld.cfg.Variables)) {
		v := ld.cfg.Variables[name]
		if v.Value == cty.NilVal && (badValue[name] || badFile) {
			v.Value = cty.UnknownVal(v.Type)
			continue
		}
		if v.Value == cty.NilVal {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "No value for required variable",
				Detail:   fmt.Sprintf("The variable %q has no default. Set it with -var %s=VALUE, a -var-file, a *%s file or %s%s.", name, name, AutoVarsSuffix, EnvVarPrefix, name),
				Subject:  v.DeclRange.Ptr(),
			})
			v.Value = cty.UnknownVal(v.Type)
		}
	}
	diags = append(diags, ld.validateVariables()...)
	return diags
}

// applyVarsFile sets the variables a values file names, recording in
// badValue each one whose value could not be used.
func (ld *loader) applyVarsFile(f *hcl.File, badValue map[string]bool) hcl.Diagnostics {
	attrs, diags := f.Body.JustAttributes()
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		a := attrs[name]
		v, declared := ld.cfg.Variables[name]
		if !declared {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagWarning,
				Summary:  "Value for undeclared variable",
				Detail:   fmt.Sprintf("The file sets %q, but the spec declares no variable of that name; the value is ignored.%s", name, didYouMeanSuffix(name, variableNames(ld.cfg.Variables))),
				Subject:  a.NameRange.Ptr(),
			})
			continue
		}
		val, d := a.Expr.Value(staticContext())
		diags = append(diags, d...)
		if d.HasErrors() {
			badValue[name] = true
			continue
		}
		d = ld.setValue(v, val, a.Expr.Range().Filename, a.Expr.Range())
		if d.HasErrors() {
			badValue[name] = true
		}
		diags = append(diags, d...)
	}
	return diags
}

// setFromString converts a command-line or environment value: primitive
// types take the text as it is; collections and objects are parsed as HCL.
func (ld *loader) setFromString(v *Variable, s, source string, rng hcl.Range) hcl.Diagnostics {
	if v.Type.IsPrimitiveType() || v.Type == cty.DynamicPseudoType {
		return ld.setValue(v, cty.StringVal(s), source, rng)
	}
	if d := CheckNesting([]byte(s), source); d.HasErrors() {
		return d
	}
	// A value that does not even start like HCL (hosts=gpu001) was written
	// as for a string variable: say how to write it instead of passing on
	// the parser's "Variables not allowed". One that does keeps the
	// parser's own, more precise error.
	t := strings.TrimSpace(s)
	plain := t != "" && !strings.ContainsRune(`[{("`, rune(t[0]))
	expr, diags := hclsyntax.ParseExpression([]byte(s), source, hcl.InitialPos)
	if diags.HasErrors() {
		if plain {
			return hcl.Diagnostics{hclSyntaxValueDiag(v, s, source, rng)}
		}
		return diags
	}
	boundExpr(expr)
	val, diags := expr.Value(staticContext())
	if diags.HasErrors() {
		if plain {
			return hcl.Diagnostics{hclSyntaxValueDiag(v, s, source, rng)}
		}
		return diags
	}
	d := ld.setValue(v, val, source, rng)
	if d.HasErrors() && plain {
		return hcl.Diagnostics{hclSyntaxValueDiag(v, s, source, rng)}
	}
	return d
}

func (ld *loader) setValue(v *Variable, val cty.Value, source string, rng hcl.Range) hcl.Diagnostics {
	conv, err := convert.Convert(val, v.Type)
	if err != nil {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid value for variable",
			Detail:   fmt.Sprintf("The value for var.%s from %s does not match its type %s: %s.", v.Name, source, v.Type.FriendlyName(), err),
			Subject:  rng.Ptr(),
		}}
	}
	v.Value, v.ValueSource = conv, source
	return nil
}

func (ld *loader) validateVariables() hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, name := range slices.Sorted(maps.Keys(ld.cfg.Variables)) {
		v := ld.cfg.Variables[name]
		if !v.Value.IsWhollyKnown() {
			continue
		}
		ctx := &hcl.EvalContext{
			Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{name: v.evalValue()})},
			Functions: ld.boundedFunctions(),
		}
		for _, val := range v.Validations {
			res, d := val.Condition.Value(ctx)
			if d.HasErrors() {
				diags = append(diags, d...)
				continue
			}
			// A condition on a sensitive value is marked too; true or
			// false says nothing the error message would not.
			res, _ = res.UnmarkDeep()
			res, err := convert.Convert(res, cty.Bool)
			if err != nil || res.IsNull() || !res.IsKnown() {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid validation condition",
					Detail:   "A validation condition must be true or false.",
					Subject:  val.Condition.Range().Ptr(),
				})
				continue
			}
			if res.False() {
				msg := val.ErrorMessage
				if v.Sensitive {
					msg += " (the value is sensitive and not shown)"
				}
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid value for variable",
					Detail:   fmt.Sprintf("%s\n\nThis was checked by the validation rule at %s; the value came from %s.", msg, val.DeclRange, v.ValueSource),
					Subject:  v.DeclRange.Ptr(),
				})
			}
		}
	}
	return diags
}

func variableNames(m map[string]*Variable) []string { return slices.Sorted(maps.Keys(m)) }
