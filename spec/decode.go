package spec

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// literalString reads an attribute that must be a constant string.
func literalString(a *hcl.Attribute) (string, hcl.Diagnostics) {
	v, diags := a.Expr.Value(staticContext())
	if diags.HasErrors() {
		return "", diags
	}
	v, err := convert.Convert(v, cty.String)
	if err != nil || v.IsNull() || !v.IsKnown() {
		return "", hcl.Diagnostics{typeDiag(a.Name, "a string", a.Expr.Range())}
	}
	return v.AsString(), nil
}

// literalBool reads an attribute that must be a constant bool.
func literalBool(a *hcl.Attribute) (bool, hcl.Diagnostics) {
	v, diags := a.Expr.Value(staticContext())
	if diags.HasErrors() {
		return false, diags
	}
	v, err := convert.Convert(v, cty.Bool)
	if err != nil || v.IsNull() || !v.IsKnown() {
		return false, hcl.Diagnostics{typeDiag(a.Name, "true or false", a.Expr.Range())}
	}
	return v.True(), nil
}

func typeDiag(name, want string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Incorrect attribute value type",
		Detail:   fmt.Sprintf("Inappropriate value for attribute %q: %s is required.", name, want),
		Subject:  rng.Ptr(),
	}
}

// didYouMeanSuffix is didYouMeanSuffix when ok; a suggestion close to a
// sensitive value would tell how it is spelled.
func didYouMeanSuffixIf(ok bool, name string, candidates []string) string {
	if !ok {
		return ""
	}
	return didYouMeanSuffix(name, candidates)
}

func didYouMeanSuffix(name string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := levenshtein.Distance(name, c, nil); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" Did you mean %q?", best)
}

// attrDecoder evaluates the attributes of one block body in an evaluation
// context and turns them into typed Attr values. Unknown values (from an
// earlier error) decode to an unset Attr without a second diagnostic.
type attrDecoder struct {
	ctx   *hcl.EvalContext
	attrs hcl.Attributes
	diags hcl.Diagnostics
	block hcl.Range
	// schema, when set, names the required attributes: HCL checks that
	// they are present, but a present null would otherwise pass as unset.
	schema *hcl.BodySchema
}

func (d *attrDecoder) required(name string) bool {
	if d.schema == nil {
		return false
	}
	for _, a := range d.schema.Attributes {
		if a.Name == name {
			return a.Required
		}
	}
	return false
}

func (d *attrDecoder) value(name string, ty cty.Type) (cty.Value, *hcl.Attribute, bool) {
	a, ok := d.attrs[name]
	if !ok {
		return cty.NilVal, nil, false
	}
	v, diags := a.Expr.Value(d.ctx)
	d.diags = append(d.diags, diags...)
	if lim := checkValue(v, a.Expr.Range()); lim.HasErrors() {
		d.diags = append(d.diags, lim...)
		return cty.NilVal, a, false
	}
	if dk := duplicateKeys(a.Expr); dk.HasErrors() {
		d.diags = append(d.diags, dk...)
		return cty.NilVal, a, false
	}
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return cty.NilVal, a, false
	}
	if v.IsNull() {
		if d.required(name) {
			d.diags = append(d.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing required argument",
				Detail:   fmt.Sprintf("The argument %q is required, and null is not a value for it.", name),
				Subject:  a.Expr.Range().Ptr(),
			})
		}
		return cty.NilVal, a, false
	}
	cv, err := convert.Convert(homogeneousList(v), ty)
	if err != nil {
		d.diags = append(d.diags, typeDiag(name, ty.FriendlyNameForConstraint(), a.Expr.Range()))
		return cty.NilVal, a, false
	}
	return cv, a, true
}

func (d *attrDecoder) string(name string) Attr[string] {
	v, a, ok := d.value(name, cty.String)
	if !ok {
		return Attr[string]{Range: rangeOr(a, d.block)}
	}
	u, sens := unmarkAll(v)
	return Attr[string]{V: u.AsString(), Set: true, Range: a.Expr.Range(), Sensitive: sens}
}

func (d *attrDecoder) enum(name string, allowed ...string) Attr[string] {
	s := d.string(name)
	if !s.Set {
		return s
	}
	for _, x := range allowed {
		if s.V == x {
			return s
		}
	}
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Invalid value for %q", name),
		Detail:   fmt.Sprintf("%s is not one of %s.%s", s.Show(), quoteList(allowed), didYouMeanSuffixIf(!s.Sensitive, s.V, allowed)),
		Subject:  s.Range.Ptr(),
	})
	return Attr[string]{Range: s.Range, Sensitive: s.Sensitive}
}

// enumOf is enum for a typed vocabulary: the word is checked once here and
// consumers compare typed constants.
func enumOf[T ~string](d *attrDecoder, name string, allowed ...T) Attr[T] {
	words := make([]string, len(allowed))
	for i, a := range allowed {
		words[i] = string(a)
	}
	s := d.enum(name, words...)
	return Attr[T]{V: T(s.V), Set: s.Set, Range: s.Range, Sensitive: s.Sensitive}
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

func (d *attrDecoder) bool(name string) Attr[bool] {
	v, a, ok := d.value(name, cty.Bool)
	if !ok {
		return Attr[bool]{Range: rangeOr(a, d.block)}
	}
	u, sens := unmarkAll(v)
	return Attr[bool]{V: u.True(), Set: true, Range: a.Expr.Range(), Sensitive: sens}
}

func (d *attrDecoder) int(name string, min, max int) Attr[int] {
	v, a, ok := d.value(name, cty.Number)
	if !ok {
		return Attr[int]{Range: rangeOr(a, d.block)}
	}
	v, sens := unmarkAll(v)
	n, ok := wholeNumber(v)
	if !ok || n < min || n > max {
		d.diags = append(d.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Invalid value for %q", name),
			Detail:   fmt.Sprintf("%q must be a whole number from %d to %d.", name, min, max),
			Subject:  a.Expr.Range().Ptr(),
		})
		return Attr[int]{Range: a.Expr.Range(), Sensitive: sens}
	}
	return Attr[int]{V: n, Set: true, Range: a.Expr.Range(), Sensitive: sens}
}

func wholeNumber(v cty.Value) (int, bool) {
	bf := v.AsBigFloat()
	if !bf.IsInt() {
		return 0, false
	}
	i, acc := bf.Int64()
	if acc != big.Exact || i > 1<<31 || i < -(1<<31) {
		return 0, false
	}
	return int(i), true
}

func (d *attrDecoder) float(name string, min, max float64) Attr[float64] {
	v, a, ok := d.value(name, cty.Number)
	if !ok {
		return Attr[float64]{Range: rangeOr(a, d.block)}
	}
	v, sens := unmarkAll(v)
	f, _ := v.AsBigFloat().Float64()
	if f < min || f > max {
		d.diags = append(d.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Invalid value for %q", name),
			Detail:   fmt.Sprintf("%q must be between %g and %g.", name, min, max),
			Subject:  a.Expr.Range().Ptr(),
		})
		return Attr[float64]{Range: a.Expr.Range(), Sensitive: sens}
	}
	return Attr[float64]{V: f, Set: true, Range: a.Expr.Range(), Sensitive: sens}
}

func (d *attrDecoder) version(name string) Attr[Version] {
	mv, a, ok := d.value(name, cty.DynamicPseudoType)
	if !ok {
		return Attr[Version]{Range: rangeOr(a, d.block)}
	}
	u, sens := unmarkAll(mv)
	if u.Type() == cty.Number {
		// HCL has already turned 12.10 into 12.1; converting it to a
		// string would install a different release than the one written.
		d.diags = append(d.diags, numberVersionDiag(name, u, a.Expr, sens))
		return Attr[Version]{Range: a.Expr.Range(), Sensitive: sens}
	}
	cv, err := convert.Convert(u, cty.String)
	if err != nil {
		d.diags = append(d.diags, typeDiag(name, "a string", a.Expr.Range()))
		return Attr[Version]{Range: a.Expr.Range(), Sensitive: sens}
	}
	s := Attr[string]{V: cv.AsString(), Set: true, Range: a.Expr.Range(), Sensitive: sens}
	v, err := ParseVersion(s.V)
	if err != nil {
		detail := err.Error() + "."
		if s.Sensitive {
			// The parser's message quotes the text it refused.
			detail = Redacted + " is not a version like \"550.127.08\" or \"12.4\"."
		}
		d.diags = append(d.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid version",
			Detail:   detail,
			Subject:  s.Range.Ptr(),
		})
		return Attr[Version]{Range: s.Range, Sensitive: s.Sensitive}
	}
	return Attr[Version]{V: v, Set: true, Range: s.Range, Sensitive: s.Sensitive}
}

func (d *attrDecoder) size(name string, allowPercent bool) Attr[Size] {
	a, ok := d.attrs[name]
	if !ok {
		return Attr[Size]{Range: d.block}
	}
	mv, _, ok := d.value(name, cty.String)
	if !ok {
		return Attr[Size]{Range: a.Expr.Range()}
	}
	v, sens := unmarkAll(mv)
	text := Quote(v.AsString(), sens)
	sz, err := ParseSize(v.AsString())
	if err != nil && sens {
		// The parser's message quotes the text it refused.
		err = fmt.Errorf("%s is not a size like \"16GiB\" or \"50%%\"", text)
	}
	if err == nil && sz.IsPercent() && !allowPercent {
		err = fmt.Errorf("%s: a percentage of RAM is not allowed here; give an absolute size like \"16GiB\"", text)
	}
	if err == nil && sz.Unlimited {
		err = fmt.Errorf("%s: \"unlimited\" is not allowed here", text)
	}
	if err != nil {
		d.diags = append(d.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid size",
			Detail:   err.Error() + ".",
			Subject:  a.Expr.Range().Ptr(),
		})
		return Attr[Size]{Range: a.Expr.Range(), Sensitive: sens}
	}
	return Attr[Size]{V: sz, Set: true, Range: a.Expr.Range(), Sensitive: sens}
}

// stringList decodes a list of strings, giving each element its own range
// when the expression is a literal list.
func (d *attrDecoder) stringList(name string) ([]Attr[string], hcl.Range) {
	v, a, ok := d.value(name, cty.List(cty.String))
	if !ok {
		return nil, rangeOr(a, d.block)
	}
	ranges := elementRanges(a.Expr)
	var out []Attr[string]
	v, all := unmarkTop(v)
	for i, ev := range v.AsValueSlice() {
		if ev.IsNull() {
			d.diags = append(d.diags, typeDiag(name, "a list of strings without nulls", a.Expr.Range()))
			continue
		}
		ev, sens := unmarkAll(ev)
		out = append(out, Attr[string]{V: ev.AsString(), Set: true, Range: pick(ranges, i, a.Expr.Range()), Sensitive: all || sens})
	}
	return out, a.Expr.Range()
}

// intList decodes a list of whole numbers with per-element ranges.
func (d *attrDecoder) intList(name string, min, max int) ([]Attr[int], hcl.Range) {
	v, a, ok := d.value(name, cty.List(cty.Number))
	if !ok {
		return nil, rangeOr(a, d.block)
	}
	ranges := elementRanges(a.Expr)
	var out []Attr[int]
	v, all := unmarkTop(v)
	for i, ev := range v.AsValueSlice() {
		r := pick(ranges, i, a.Expr.Range())
		ev, sens := unmarkAll(ev)
		sens = sens || all
		n, ok := 0, false
		if !ev.IsNull() {
			n, ok = wholeNumber(ev)
		}
		if !ok || n < min || n > max {
			d.diags = append(d.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Invalid value in %q", name),
				Detail:   fmt.Sprintf("Each element of %q must be a whole number from %d to %d.", name, min, max),
				Subject:  r.Ptr(),
			})
			continue
		}
		out = append(out, Attr[int]{V: n, Set: true, Range: r, Sensitive: sens})
	}
	return out, a.Expr.Range()
}

// stringMap decodes a map whose values are rendered as strings (numbers and
// bools included, as sysctl values are), with a range per entry.
func (d *attrDecoder) stringMap(name string) (map[string]Attr[string], hcl.Range) {
	v, a, ok := d.value(name, cty.Map(cty.String))
	if !ok {
		return nil, rangeOr(a, d.block)
	}
	ranges := itemRanges(a.Expr)
	out := map[string]Attr[string]{}
	v, all := unmarkTop(v)
	if all {
		// The keys are sensitive too, and a map key cannot be hidden
		// (it names the sysctl, the ulimit, the GPU).
		d.diags = append(d.diags, sensitiveKeysDiag(name, a.Expr.Range()))
		return nil, a.Expr.Range()
	}
	for k, ev := range v.AsValueMap() {
		r, ok := ranges[k]
		if !ok {
			r = a.Expr.Range()
		}
		if ev.IsNull() {
			d.diags = append(d.diags, typeDiag(name, "a map without null values", r))
			continue
		}
		ev, sens := unmarkAll(ev)
		out[k] = Attr[string]{V: ev.AsString(), Set: true, Range: r, Sensitive: sens}
	}
	return out, a.Expr.Range()
}

func pick(rs []hcl.Range, i int, fallback hcl.Range) hcl.Range {
	if i < len(rs) {
		return rs[i]
	}
	return fallback
}

func rangeOr(a *hcl.Attribute, fallback hcl.Range) hcl.Range {
	if a != nil {
		return a.Expr.Range()
	}
	return fallback
}

// elementRanges returns the range of each element of a literal tuple.
func elementRanges(e hcl.Expression) []hcl.Range {
	t, ok := e.(*hclsyntax.TupleConsExpr)
	if !ok {
		return nil
	}
	out := make([]hcl.Range, len(t.Exprs))
	for i, x := range t.Exprs {
		out[i] = x.Range()
	}
	return out
}

// itemRanges maps each literal key of an object expression to the range of
// its value, so an error about one sysctl points at that line.
func itemRanges(e hcl.Expression) map[string]hcl.Range {
	o, ok := e.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return nil
	}
	out := map[string]hcl.Range{}
	for _, it := range o.Items {
		k, diags := it.KeyExpr.Value(staticContext())
		if diags.HasErrors() || !k.IsKnown() || k.IsNull() {
			continue
		}
		k, err := convert.Convert(k, cty.String)
		if err != nil {
			continue
		}
		out[k.AsString()] = hcl.RangeBetween(it.KeyExpr.Range(), it.ValueExpr.Range())
	}
	return out
}

// duplicateKeys reports a key written twice in a literal object, at any
// depth: HCL keeps the last value without a word, so of
// { "vm.swappiness" = 1, "vm.swappiness" = 60 } one setting would vanish.
func duplicateKeys(e hcl.Expression) hcl.Diagnostics {
	var diags hcl.Diagnostics
	switch x := e.(type) {
	case *hclsyntax.ObjectConsExpr:
		seen := map[string]hcl.Range{}
		for _, it := range x.Items {
			diags = append(diags, duplicateKeys(it.ValueExpr)...)
			k, d := it.KeyExpr.Value(staticContext())
			if d.HasErrors() || !k.IsKnown() || k.IsNull() {
				continue
			}
			k, err := convert.Convert(k, cty.String)
			if err != nil {
				continue
			}
			if prev, dup := seen[k.AsString()]; dup {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate key",
					Detail:   fmt.Sprintf("The key %q is already set at %s; only one value can win, so write it once.", k.AsString(), prev),
					Subject:  it.KeyExpr.Range().Ptr(),
				})
				continue
			}
			seen[k.AsString()] = it.KeyExpr.Range()
		}
	case *hclsyntax.TupleConsExpr:
		for _, el := range x.Exprs {
			diags = append(diags, duplicateKeys(el)...)
		}
	}
	return diags
}
