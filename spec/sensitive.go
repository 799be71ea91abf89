package spec

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Sensitivity is carried through evaluation as a go-cty mark, as Terraform
// does: a sensitive variable's value is marked when it enters an
// evaluation context, HCL and the cty functions carry the mark to every
// value computed from it (upper(var.secret), "x-${var.secret}", a map
// holding it), and the decoder records per attribute whether the value it
// turned into Go was marked (Attr.Sensitive). Output paths then print
// Redacted instead of the value, whatever its length.

// valueMark is the type of gpuform's cty marks, so no other package's
// mark can be mistaken for one.
type valueMark string

// sensitiveMark marks a value derived from a sensitive variable or output.
const sensitiveMark = valueMark("sensitive")

// Redacted is what every output prints in place of a sensitive value.
const Redacted = "(sensitive value)"

// markSensitive marks v as sensitive.
func markSensitive(v cty.Value) cty.Value {
	if v == cty.NilVal {
		return v
	}
	return v.Mark(sensitiveMark)
}

// unmarkAll removes every mark from v, at any depth, and reports whether
// there was a sensitive one. Values are unmarked only where they become Go
// values, so that the flag travels with them.
func unmarkAll(v cty.Value) (cty.Value, bool) {
	u, paths := v.UnmarkDeepWithPaths()
	for _, pm := range paths {
		if _, ok := pm.Marks[sensitiveMark]; ok {
			return u, true
		}
	}
	return u, false
}

// Quote returns s quoted as messages quote values (%q), or Redacted when
// it is sensitive.
func Quote(s string, sensitive bool) string {
	if sensitive {
		return Redacted
	}
	return strconv.Quote(s)
}

// Show returns a as messages write it: %q of its value, or Redacted.
func (a Attr[T]) Show() string {
	if a.Sensitive {
		return Redacted
	}
	if s, ok := any(a.V).(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q", fmt.Sprint(a.V))
}

// Redactor replaces known sensitive strings in free text. It is the second
// line of defence, behind the marks: message code that quotes a value it
// got from an Attr already checks Attr.Sensitive.
//
// A value is replaced where it stands as a whole token (not inside a
// longer word, number or version), so a 3-character secret "abc" hides
// "abc" and "\"abc\"" but leaves "abcd" and "main.gpuform.hcl:12" alone.
// One or two characters are replaced only when quoted: bare, they collide
// with counts and line numbers, and hiding those would make messages
// useless without hiding anything, since gpuform quotes the values it
// prints.
type Redactor struct {
	secrets []string // longest first, so a secret containing another is hidden whole
}

// NewRedactor returns a Redactor for the given sensitive strings; empty
// strings are ignored. With none it returns nil, which redacts nothing.
func NewRedactor(secrets []string) *Redactor {
	seen := map[string]bool{}
	r := &Redactor{}
	for _, s := range secrets {
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		r.secrets = append(r.secrets, s)
	}
	if len(r.secrets) == 0 {
		return nil
	}
	sort.Slice(r.secrets, func(i, j int) bool {
		if len(r.secrets[i]) != len(r.secrets[j]) {
			return len(r.secrets[i]) > len(r.secrets[j])
		}
		return r.secrets[i] < r.secrets[j]
	})
	return r
}

// Empty reports whether there is nothing to redact.
func (r *Redactor) Empty() bool { return r == nil || len(r.secrets) == 0 }

// Redact returns text with every sensitive string replaced by Redacted.
func (r *Redactor) Redact(text string) string {
	if r.Empty() {
		return text
	}
	for _, s := range r.secrets {
		// The quoted forms first: %q and JSON escaping of the value.
		text = strings.ReplaceAll(text, strconv.Quote(s), Redacted)
		if len(s) >= 3 {
			text = replaceTokens(text, s)
		}
	}
	return text
}

// tokenChar reports whether c continues a word, number or version, so that
// a match next to it is part of something longer.
func tokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

// replaceTokens replaces each occurrence of s in text that is not part of a
// longer token: the bytes before and after it are not letters or digits,
// and not a '.' or '-' that joins it to one ("550" in "550.54" stays).
func replaceTokens(text, s string) string {
	var b strings.Builder
	i := 0
	for {
		j := strings.Index(text[i:], s)
		if j < 0 {
			b.WriteString(text[i:])
			return b.String()
		}
		start, end := i+j, i+j+len(s)
		if boundaryBefore(text, start) && boundaryAfter(text, end) {
			b.WriteString(text[i:start])
			b.WriteString(Redacted)
		} else {
			b.WriteString(text[i : start+1])
			end = start + 1
		}
		i = end
	}
}

func boundaryBefore(text string, at int) bool {
	if at == 0 {
		return true
	}
	c := text[at-1]
	if tokenChar(c) {
		return false
	}
	if (c == '.' || c == '-') && at >= 2 && tokenChar(text[at-2]) {
		return false
	}
	return true
}

func boundaryAfter(text string, at int) bool {
	if at >= len(text) {
		return true
	}
	c := text[at]
	if tokenChar(c) {
		return false
	}
	if (c == '.' || c == '-') && at+1 < len(text) && tokenChar(text[at+1]) {
		return false
	}
	return true
}

// Redactor returns a Redactor for every sensitive value of the spec: the
// sensitive variables' values and every decoded attribute value that was
// marked, derived ones included.
func (c *Config) Redactor() *Redactor {
	if c == nil {
		return nil
	}
	return NewRedactor(c.sensitiveStrings)
}

// sensitiveStrings lists the primitive values inside v as text.
func sensitiveStrings(v cty.Value) []string {
	var out []string
	if v == cty.NilVal {
		return nil
	}
	u, _ := v.UnmarkDeep()
	_ = cty.Walk(u, func(_ cty.Path, x cty.Value) (bool, error) {
		if !x.IsKnown() || x.IsNull() {
			return false, nil
		}
		switch x.Type() {
		case cty.String:
			out = append(out, x.AsString())
		case cty.Number:
			out = append(out, x.AsBigFloat().Text('f', -1))
		}
		return true, nil
	})
	return out
}

// redactDiagnostics hides sensitive values in diagnostics: those HCL wrote
// about an expression that used a marked value (a function that quotes its
// argument in its error, "cannot convert \"abc\" to number") lose their
// detail, and every text goes through the Redactor as a last line.
func redactDiagnostics(r *Redactor, diags hcl.Diagnostics) hcl.Diagnostics {
	for _, d := range diags {
		if d.Expression != nil && d.EvalContext != nil && usesSensitive(d.Expression, d.EvalContext) {
			d.Detail = "The expression uses a sensitive value, so the error message, which may quote it, is not shown. Check the expression's inputs."
		}
		d.Summary = r.Redact(d.Summary)
		d.Detail = r.Redact(d.Detail)
	}
	return diags
}

// usesSensitive reports whether any value expr refers to is marked.
func usesSensitive(expr hcl.Expression, ctx *hcl.EvalContext) bool {
	for _, tr := range expr.Variables() {
		v, diags := tr.TraverseAbs(ctx)
		if diags.HasErrors() {
			continue
		}
		if _, s := unmarkAll(v); s {
			return true
		}
	}
	return false
}

// unmarkTop removes the marks of v itself (not of its elements) and
// reports whether it was sensitive as a whole.
func unmarkTop(v cty.Value) (cty.Value, bool) {
	u, ms := v.Unmark()
	_, ok := ms[sensitiveMark]
	return u, ok
}

// sensitiveKeysDiag refuses a collection that is sensitive as a whole
// where its keys or elements name things gpuform prints (sysctl names,
// hosts), as Terraform refuses a sensitive for_each.
func sensitiveKeysDiag(name string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Sensitive value not allowed here",
		Detail:   fmt.Sprintf("The value of %q is sensitive as a whole, but its keys name what gpuform plans and reports, which cannot be hidden. Build it from non-sensitive keys with sensitive values, like { \"key\" = var.secret }.", name),
		Subject:  rng.Ptr(),
	}
}

// sensitiveNotAllowedDiag refuses a sensitive value where gpuform must
// print it: host names and connection settings appear in every plan,
// report and SSH error, hardware descriptions in lint findings.
func sensitiveNotAllowedDiag(what string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Sensitive value not allowed here",
		Detail:   fmt.Sprintf("%s is derived from a sensitive value, but gpuform prints it in plans, reports and errors, so it cannot be hidden. Use a value that is not sensitive.", what),
		Subject:  rng.Ptr(),
	}
}

// sensitiveText is implemented by Attr: the value as text when it is
// sensitive.
type sensitiveText interface {
	sensitiveText() (string, bool)
}

func (a Attr[T]) sensitiveText() (string, bool) {
	if !a.Sensitive || !a.Set {
		return "", false
	}
	return fmt.Sprint(a.V), true
}

// collectSensitive records the text of every sensitive value of cfg and of
// its modules: sensitive variables and outputs as given, and every decoded
// attribute that was marked, which covers derived values (upper(var.x)).
func collectSensitive(cfg *Config) {
	var out []string
	var walkCfg func(c *Config, depth int)
	walkCfg = func(c *Config, depth int) {
		if c == nil || depth > 64 {
			return
		}
		for _, name := range slices.Sorted(maps.Keys(c.Variables)) {
			if v := c.Variables[name]; v.Sensitive {
				out = append(out, sensitiveStrings(v.Value)...)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(c.Outputs)) {
			if o := c.Outputs[name]; o.Sensitive {
				out = append(out, sensitiveStrings(o.Value)...)
			}
		}
		for _, n := range c.Nodes {
			walkAttrs(reflect.ValueOf(n), &out, 0)
		}
		for _, name := range slices.Sorted(maps.Keys(c.Modules)) {
			if m := c.Modules[name]; m != nil {
				walkCfg(m.Config, depth+1)
			}
		}
	}
	walkCfg(cfg, 0)
	cfg.sensitiveStrings = out
}

// walkAttrs finds every Attr under v (pointers, structs, slices, maps).
func walkAttrs(v reflect.Value, out *[]string, depth int) {
	if depth > 16 || !v.IsValid() {
		return
	}
	if v.CanInterface() {
		if st, ok := v.Interface().(sensitiveText); ok {
			if s, ok := st.sensitiveText(); ok {
				*out = append(*out, s)
			}
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkAttrs(v.Elem(), out, depth+1)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				walkAttrs(v.Field(i), out, depth+1)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walkAttrs(v.Index(i), out, depth+1)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			walkAttrs(iter.Value(), out, depth+1)
		}
	}
}

// Redactor returns a Redactor for the sensitive values decoded into n.
func (n *Node) Redactor() *Redactor {
	if n == nil {
		return nil
	}
	var out []string
	walkAttrs(reflect.ValueOf(n), &out, 0)
	return NewRedactor(out)
}
