package spec

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/internal/readlimit"
)

// The limits below bound the work and memory one load of a spec may take,
// whoever wrote it: a spec from a pull request is untrusted input, and a
// 1.4 KB file of locals that each double a string used to exhaust the
// machine. Real specs stay orders of magnitude below every one of them.
const (
	// MaxFileSize bounds every file the loader reads: spec files, module
	// files, variable files, the lock file and the lint configuration.
	MaxFileSize = 4 << 20
	// MaxStringLength bounds one string value produced by evaluation.
	MaxStringLength = 1 << 20
	// MaxValueBytes bounds the string bytes in one value, counted through
	// nested collections (a list that repeats one string counts it each time).
	MaxValueBytes = 16 << 20
	// MaxCollectionLength bounds the elements in one value, counted through
	// nested collections.
	MaxCollectionLength = 100_000
	// MaxForIterations bounds the iterations of all for expressions of one
	// load together, so nested loops cannot multiply into billions.
	MaxForIterations = 100_000
	// MaxForCollection bounds the collection one for expression iterates
	// over. Its result is a tuple, and go-cty converts a tuple to a list in
	// time quadratic in its length (50,000 elements take 17 s).
	MaxForCollection = 100_000
	// MaxInterpolatedBytes bounds the text all string templates of one load
	// interpolate together.
	MaxInterpolatedBytes = 64 << 20
	// MaxFunctionWork bounds the size of all function arguments and results
	// of one load together (string bytes plus elements).
	MaxFunctionWork = 8 << 20
	// MaxModuleInstances bounds the module calls one load evaluates in
	// total, at every depth: fan-out times depth grows exponentially.
	MaxModuleInstances = 1000
)

// LimitError is an evaluation that would exceed one of the limits above. Its
// message says what was too large and which limit applies.
type LimitError struct {
	// Summary is the diagnostic summary ("Value too large").
	Summary string
	// What names what was measured ("This string's 2097152 bytes").
	What string
	// Limit is the limit, as a person reads it.
	Limit string
	// Hint says what to do instead.
	Hint string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s exceeds the limit of %s; %s", e.What, e.Limit, e.Hint)
}

// loadLimits is the budget one load spends, shared by the root and every
// module it calls.
type loadLimits struct {
	forIterations int64
	interpolated  int64
	functionWork  int64
	modules       int
	// spent is the first budget error: once a load-wide budget is gone,
	// every later call fails at once instead of doing work to no end.
	spent       error
	sourceBytes int64
}

// limits returns the budget of this load, creating it for the root.
func (ld *loader) limits() *loadLimits {
	if ld.budget == nil {
		ld.budget = &loadLimits{}
	}
	return ld.budget
}

// boundedFunctions is the function table with every function's arguments
// and result measured against the load's budget, and the internal
// functions bounds() inserts into parsed files.
func (ld *loader) boundedFunctions() map[string]function.Function {
	lim := ld.limits()
	out := map[string]function.Function{}
	for name, f := range functions() {
		if name == "try" || name == "can" {
			// Their parameters are expression closures, which hcl
			// evaluates for them; what they evaluate is bounded already.
			out[name] = f
			continue
		}
		out[name] = boundFunction(name, f, lim)
	}
	for name, f := range internalFunctions(lim) {
		out[name] = f
	}
	return out
}

// staticContext is the context for expressions that may use no variables
// and no functions (variable files, literal attributes): it holds only the
// internal functions, so their for expressions and templates stay bounded.
func staticContext() *hcl.EvalContext {
	return &hcl.EvalContext{Functions: internalFunctions(&loadLimits{})}
}

const (
	// forFuncName and interpFuncName name the internal functions; the
	// colon keeps a spec from calling them, since no HCL identifier has one.
	forFuncName    = "gpuform:for"
	interpFuncName = "gpuform:interpolate"
)

func passThroughParam() []function.Parameter {
	return []function.Parameter{{
		Name: "value", Type: cty.DynamicPseudoType,
		AllowNull: true, AllowUnknown: true, AllowDynamicType: true, AllowMarked: true,
	}}
}

func internalFunctions(lim *loadLimits) map[string]function.Function {
	passType := func(args []cty.Value) (cty.Type, error) { return args[0].Type(), nil }
	return map[string]function.Function{
		// The collection of a for expression: counts its iterations.
		forFuncName: function.New(&function.Spec{
			Params: passThroughParam(),
			Type:   passType,
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				v, _ := args[0].Unmark()
				if lim.spent != nil {
					return cty.DynamicVal, lim.spent
				}
				if v.IsKnown() && !v.IsNull() && (v.CanIterateElements()) {
					if n := v.LengthInt(); n > MaxForCollection {
						return cty.DynamicVal, &LimitError{
							Summary: "Too many iterations",
							What:    fmt.Sprintf("A for expression over %d elements", n),
							Limit:   fmt.Sprintf("%d", MaxForCollection),
							Hint:    "iterate over a smaller collection",
						}
					}
					lim.forIterations += int64(v.LengthInt())
					if lim.forIterations > MaxForIterations {
						lim.spent = &LimitError{
							Summary: "Too many iterations",
							What:    fmt.Sprintf("Iterating over these %d elements brings the spec's for expressions to %d iterations, which", v.LengthInt(), lim.forIterations),
							Limit:   fmt.Sprintf("%d", MaxForIterations),
							Hint:    "nested for expressions multiply; iterate over smaller collections",
						}
						return cty.DynamicVal, lim.spent
					}
				}
				return args[0], nil
			},
		}),
		// One interpolated part of a string template: counts its bytes.
		interpFuncName: function.New(&function.Spec{
			Params: passThroughParam(),
			Type:   passType,
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				v, _ := args[0].Unmark()
				if v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
					n := int64(len(v.AsString()))
					lim.interpolated += n
					if n > MaxStringLength {
						return cty.DynamicVal, stringTooLong(n)
					}
					if lim.interpolated > MaxInterpolatedBytes {
						lim.spent = &LimitError{
							Summary: "Too much text interpolated",
							What:    fmt.Sprintf("The string templates of this spec interpolate %d bytes, which", lim.interpolated),
							Limit:   readlimit.FormatSize(MaxInterpolatedBytes),
							Hint:    "a spec builds short strings; look for templates that repeat a growing value",
						}
						return cty.DynamicVal, lim.spent
					}
				}
				return args[0], nil
			},
		}),
	}
}

func stringTooLong(n int64) *LimitError {
	return &LimitError{
		Summary: "Value too large",
		What:    fmt.Sprintf("A string of %d bytes", n),
		Limit:   readlimit.FormatSize(MaxStringLength),
		Hint:    "a spec builds short strings; look for templates or functions that repeat a growing value",
	}
}

// measureValue walks v counting elements and string bytes, and stops as
// soon as a limit is passed, so its own cost is bounded even for a value
// that repeats one list a million times by reference.
func measureValue(v cty.Value) (elems, bytes int64, err error) {
	stack := []cty.Value{v}
	for len(stack) > 0 {
		x, _ := stack[len(stack)-1].Unmark()
		stack = stack[:len(stack)-1]
		if !x.IsKnown() || x.IsNull() {
			continue
		}
		ty := x.Type()
		switch {
		case ty == cty.String:
			n := int64(len(x.AsString()))
			if n > MaxStringLength {
				return elems, bytes, stringTooLong(n)
			}
			bytes += n
			if bytes > MaxValueBytes {
				return elems, bytes, &LimitError{
					Summary: "Value too large",
					What:    fmt.Sprintf("A value holding more than %d bytes of text", bytes),
					Limit:   readlimit.FormatSize(MaxValueBytes),
					Hint:    "look for lists that repeat a long string",
				}
			}
		case x.CanIterateElements():
			n := int64(x.LengthInt())
			elems += n
			if elems > MaxCollectionLength {
				return elems, bytes, collectionTooLong(elems)
			}
			for it := x.ElementIterator(); it.Next(); {
				_, e := it.Element()
				stack = append(stack, e)
			}
		}
	}
	return elems, bytes, nil
}

func collectionTooLong(n int64) *LimitError {
	return &LimitError{
		Summary: "Value too large",
		What:    fmt.Sprintf("A value of %d or more elements (counting nested collections)", n),
		Limit:   fmt.Sprintf("%d", MaxCollectionLength),
		Hint:    "look for collections that are multiplied or repeated",
	}
}

// checkValue reports a value over the size limits as a diagnostic on rng.
func checkValue(v cty.Value, rng hcl.Range) hcl.Diagnostics {
	if _, _, err := measureValue(v); err != nil {
		return hcl.Diagnostics{limitDiag(err.(*LimitError), rng)}
	}
	return nil
}

func limitDiag(e *LimitError, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  e.Summary,
		Detail:   e.Error() + ".",
		Subject:  rng.Ptr(),
	}
}

// boundFunction wraps f so that its arguments are measured before it runs,
// the functions whose result can be far larger than their arguments are
// refused when it would be, and its result is measured after.
func boundFunction(name string, f function.Function, lim *loadLimits) function.Function {
	// The wrapper takes every argument as it comes and converts it itself,
	// after turning long tuples into lists: hcl would otherwise convert a
	// tuple from a for expression to the parameter's list type in time
	// quadratic in its length (go-cty's type unification).
	params := dynamicParams(f.Params())
	var varParam *function.Parameter
	if vp := f.VarParam(); vp != nil {
		varParam = &dynamicParams([]function.Parameter{*vp})[0]
	}
	return function.New(&function.Spec{
		Description: f.Description(),
		Params:      params,
		VarParam:    varParam,
		Type: func(args []cty.Value) (cty.Type, error) {
			args, err := convertArgs(f, args)
			if err != nil {
				return cty.NilType, err
			}
			ty, err := f.ReturnTypeForValues(args)
			if err == nil && ty.IsTupleType() && len(ty.TupleElementTypes()) >= homogeneousMin {
				// The result may become a list (homogeneousList), so its
				// type is only known once it is computed.
				return cty.DynamicPseudoType, nil
			}
			return ty, err
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if lim.spent != nil {
				return cty.DynamicVal, lim.spent
			}
			var work int64
			for _, a := range args {
				e, b, err := measureValue(a)
				if err != nil {
					return cty.DynamicVal, err
				}
				work += e + b
			}
			args, err := convertArgs(f, args)
			if err != nil {
				return cty.DynamicVal, err
			}
			if err := estimateResult(name, args); err != nil {
				return cty.DynamicVal, err
			}
			if err := lim.spend(work); err != nil {
				return cty.DynamicVal, err
			}
			res, err := f.Call(args)
			if err != nil {
				return res, err
			}
			e, b, err := measureValue(res)
			if err != nil {
				return cty.DynamicVal, err
			}
			return homogeneousList(res), lim.spend(e + b)
		},
	})
}

// dynamicParams copies params with every type loosened to any type; the
// wrapped function converts (and reports wrong types) itself.
func dynamicParams(params []function.Parameter) []function.Parameter {
	out := make([]function.Parameter, len(params))
	for i, p := range params {
		p.Type = cty.DynamicPseudoType
		p.AllowDynamicType = true
		out[i] = p
	}
	return out
}

// convertArgs does what hcl does before calling a function, converting each
// argument to its parameter's type, with long tuples made lists first.
func convertArgs(f function.Function, args []cty.Value) ([]cty.Value, error) {
	params, vp := f.Params(), f.VarParam()
	out := make([]cty.Value, len(args))
	for i, a := range args {
		var p *function.Parameter
		if i < len(params) {
			p = &params[i]
		} else if vp != nil {
			p = vp
		}
		a = homogeneousList(a)
		if p != nil && p.Type != cty.DynamicPseudoType && !(a.IsNull() && p.AllowNull) {
			c, err := convert.Convert(a, p.Type)
			if err != nil {
				return nil, function.NewArgError(i, err)
			}
			a = c
		}
		out[i] = a
	}
	return out, nil
}

func (lim *loadLimits) spend(work int64) error {
	lim.functionWork += work
	if lim.functionWork > MaxFunctionWork {
		lim.spent = &LimitError{
			Summary: "Too much work in functions",
			What:    fmt.Sprintf("The function calls of this spec have handled %d bytes and elements, which", lim.functionWork),
			Limit:   fmt.Sprintf("%d", MaxFunctionWork),
			Hint:    "look for function calls inside for expressions over large collections",
		}
		return lim.spent
	}
	return nil
}

// homogeneousMin is the tuple length from which homogeneousList applies;
// shorter tuples convert quickly and keep their type.
const homogeneousMin = 100

// homogeneousList turns a long tuple whose elements share one type into a
// list of that type. flatten and others return tuples, and go-cty converts a
// tuple to a list (for join, or a node's list attribute) in time quadratic
// in its length, where a list converts in linear time.
func homogeneousList(v cty.Value) cty.Value {
	if !v.Type().IsTupleType() || len(v.Type().TupleElementTypes()) < homogeneousMin {
		return v
	}
	v, marks := v.Unmark()
	if !v.IsKnown() || v.IsNull() {
		return v.WithMarks(marks)
	}
	ets := v.Type().TupleElementTypes()
	if len(ets) < homogeneousMin {
		return v
	}
	for _, t := range ets[1:] {
		if !t.Equals(ets[0]) || t == cty.DynamicPseudoType {
			return v.WithMarks(marks)
		}
	}
	return cty.ListVal(v.AsValueSlice()).WithMarks(marks)
}

// estimateResult refuses, before computing, the calls whose result would
// be far larger than their arguments: measuring the result afterwards would
// be too late for setproduct(range(1000), range(1000), range(1000)).
func estimateResult(name string, args []cty.Value) error {
	switch name {
	case "range":
		return estimateRange(args)
	case "setproduct":
		return estimateSetProduct(args)
	case "join":
		return estimateJoin(args)
	case "format":
		return estimateFormat(args)
	case "formatlist":
		return estimateFormatList(args)
	case "replace":
		return estimateReplace(args)
	case "regexreplace":
		return estimateRegexReplace(args)
	case "indent":
		return estimateIndent(args)
	}
	return nil
}

// known reports whether every argument is known and not null, unmarking
// them; estimates skip calls with unknowns, which compute nothing.
func known(args []cty.Value) ([]cty.Value, bool) {
	out := make([]cty.Value, len(args))
	for i, a := range args {
		u, _ := a.UnmarkDeep()
		if !u.IsWhollyKnown() || u.IsNull() {
			return nil, false
		}
		out[i] = u
	}
	return out, true
}

func tooManyElements(n float64) error {
	if n > MaxCollectionLength {
		return collectionTooLong(int64(math.Min(n, math.MaxInt64)))
	}
	return nil
}

func tooLongString(n float64) error {
	if n > MaxStringLength {
		return stringTooLong(int64(math.Min(n, math.MaxInt64)))
	}
	return nil
}

func numArg(v cty.Value) float64 {
	if v.Type() != cty.Number {
		return 0
	}
	f, _ := v.AsBigFloat().Float64()
	return f
}

func estimateRange(args []cty.Value) error {
	a, ok := known(args)
	if !ok {
		return nil
	}
	start, end, step := 0.0, 0.0, 1.0
	switch len(a) {
	case 1:
		end = numArg(a[0])
	case 2:
		start, end = numArg(a[0]), numArg(a[1])
	default:
		start, end, step = numArg(a[0]), numArg(a[1]), numArg(a[2])
	}
	if step == 0 || math.IsNaN(step) {
		return nil // range reports this itself
	}
	return tooManyElements(math.Ceil((end - start) / step))
}

func estimateSetProduct(args []cty.Value) error {
	a, ok := known(args)
	if !ok {
		return nil
	}
	n := 1.0
	for _, s := range a {
		if !s.CanIterateElements() {
			return nil
		}
		n *= float64(s.LengthInt())
	}
	return tooManyElements(n * float64(len(a)))
}

func estimateJoin(args []cty.Value) error {
	a, ok := known(args)
	if !ok || len(a) < 2 || a[0].Type() != cty.String {
		return nil
	}
	total, count := 0.0, 0.0
	for _, l := range a[1:] {
		if !l.CanIterateElements() {
			return nil
		}
		for it := l.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.Type() == cty.String {
				total += float64(len(e.AsString()))
			}
			count++
		}
	}
	return tooLongString(total + count*float64(len(a[0].AsString())))
}

// verbWidth finds the widths and precisions written in a format string
// ("%1000000d"), which format pads to without any argument being large.
var verbWidth = lazyre.New(`%[-+# 0]*(\[\d+\])?(\d*)(\.(\d*))?`)

func formatEstimate(fmtStr string, args []cty.Value) float64 {
	largest := 0.0
	for _, a := range args {
		e, b, _ := measureValue(a)
		largest = math.Max(largest, float64(b+e*24))
	}
	total := float64(len(fmtStr))
	for _, m := range verbWidth.FindAllStringSubmatch(fmtStr, -1) {
		for _, num := range []string{m[2], m[4]} {
			if num == "" {
				continue
			}
			w, ok := new(big.Float).SetString(num)
			if !ok {
				continue
			}
			f, _ := w.Float64()
			total += f
		}
		total += largest + 24
	}
	return total
}

func estimateFormat(args []cty.Value) error {
	a, ok := known(args)
	if !ok || len(a) == 0 || a[0].Type() != cty.String {
		return nil
	}
	return tooLongString(formatEstimate(a[0].AsString(), a[1:]))
}

func estimateFormatList(args []cty.Value) error {
	a, ok := known(args)
	if !ok || len(a) == 0 || a[0].Type() != cty.String {
		return nil
	}
	n := 1.0
	for _, x := range a[1:] {
		if x.CanIterateElements() {
			n = math.Max(n, float64(x.LengthInt()))
		}
	}
	if err := tooManyElements(n); err != nil {
		return err
	}
	est := formatEstimate(a[0].AsString(), nil) * n
	if est > MaxValueBytes {
		return &LimitError{Summary: "Value too large", What: fmt.Sprintf("A list of formatted strings of about %.0f bytes", est), Limit: readlimit.FormatSize(MaxValueBytes), Hint: "format fewer or shorter strings"}
	}
	return nil
}

func estimateReplace(args []cty.Value) error {
	a, ok := known(args)
	if !ok || len(a) != 3 || a[0].Type() != cty.String || a[1].Type() != cty.String || a[2].Type() != cty.String {
		return nil
	}
	s, sub, repl := a[0].AsString(), a[1].AsString(), a[2].AsString()
	if len(sub) > 1 && strings.HasPrefix(sub, "/") && strings.HasSuffix(sub, "/") {
		return estimateRegexReplace([]cty.Value{a[0], cty.StringVal(sub[1 : len(sub)-1]), a[2]})
	}
	n := float64(strings.Count(s, sub))
	return tooLongString(float64(len(s)) + n*float64(len(repl)))
}

func estimateRegexReplace(args []cty.Value) error {
	a, ok := known(args)
	if !ok || len(a) != 3 || a[0].Type() != cty.String || a[1].Type() != cty.String || a[2].Type() != cty.String {
		return nil
	}
	re, err := regexp.Compile(a[1].AsString())
	if err != nil {
		return nil // the function reports it
	}
	s, repl := a[0].AsString(), a[2].AsString()
	matches := float64(len(re.FindAllStringIndex(s, -1)))
	// A replacement may refer to the match ($0, ${1}) once per "$".
	per := float64(len(repl)) + float64(strings.Count(repl, "$"))*float64(len(s))
	return tooLongString(float64(len(s)) + matches*per)
}

func estimateIndent(args []cty.Value) error {
	a, ok := known(args)
	if !ok || len(a) != 2 || a[1].Type() != cty.String {
		return nil
	}
	s := a[1].AsString()
	return tooLongString(float64(len(s)) + numArg(a[0])*float64(strings.Count(s, "\n")+1))
}

// bounds rewrites a parsed file so that its for expressions and string
// templates report to the load's budget: the collection of every for
// expression and every interpolated part of a template is passed through an
// internal function. hcl evaluates these itself, so without this a few
// nested loops or a template that repeats a growing value are unbounded.
// It is idempotent, since the parser hands out a cached file for a module
// that is called twice.
func bounds(body hcl.Body) {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return
	}
	_ = hclsyntax.VisitAll(sb, func(n hclsyntax.Node) hcl.Diagnostics {
		boundNode(n)
		return nil
	})
}

// boundExpr is bounds for a single expression.
func boundExpr(expr hclsyntax.Expression) {
	_ = hclsyntax.VisitAll(expr, func(n hclsyntax.Node) hcl.Diagnostics {
		boundNode(n)
		return nil
	})
}

func boundNode(n hclsyntax.Node) {
	switch x := n.(type) {
	case *hclsyntax.ForExpr:
		if !isInternalCall(x.CollExpr, forFuncName) {
			x.CollExpr = internalCall(forFuncName, x.CollExpr)
		}
	case *hclsyntax.TemplateExpr:
		for i, p := range x.Parts {
			if _, lit := p.(*hclsyntax.LiteralValueExpr); lit || isInternalCall(p, interpFuncName) {
				continue
			}
			x.Parts[i] = internalCall(interpFuncName, p)
		}
	}
}

func internalCall(name string, arg hclsyntax.Expression) hclsyntax.Expression {
	r := arg.Range()
	return &hclsyntax.FunctionCallExpr{
		Name: name, Args: []hclsyntax.Expression{arg},
		NameRange: r, OpenParenRange: r, CloseParenRange: r,
	}
}

func isInternalCall(e hclsyntax.Expression, name string) bool {
	c, ok := e.(*hclsyntax.FunctionCallExpr)
	return ok && c.Name == name
}

// explainLimits turns the "Error in function call" hcl reports for a
// function that hit a limit into the limit's own diagnostic, which does not
// name the internal functions a spec never wrote. Once a budget of the whole
// load is spent every later loop iteration fails the same way, so only the
// first diagnostic of each limit at each place is kept, and only the first
// of each load-wide budget.
func explainLimits(diags hcl.Diagnostics) hcl.Diagnostics {
	out := diags[:0]
	seen := map[string]bool{}
	for _, d := range diags {
		var le *LimitError
		if extra, ok := d.Extra.(hclsyntax.FunctionCallDiagExtra); ok && errors.As(extra.FunctionCallError(), &le) {
			d.Summary = le.Summary
			d.Detail = le.Error() + "."
		}
		if le != nil || strings.Contains(d.Detail, "exceeds the limit of") {
			key := d.Summary
			if d.Subject != nil && d.Summary == "Value too large" {
				key += d.Subject.String()
			}
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		out = append(out, d)
	}
	return out
}

// readSpecFile reads a spec, module or variables file under MaxFileSize.
// A link out of the repository that holds it is refused (see
// readlimit.LinkLeavesRepository).
func readSpecFile(path string) ([]byte, error) {
	if err := readlimit.LinkLeavesRepository(path); err != nil {
		return nil, err
	}
	return readlimit.ReadRegularFile(path, MaxFileSize)
}

// MaxSourceBytes bounds the source text one load reads in total: the spec
// directory and every module call's files (a module called twice is read
// twice).
const MaxSourceBytes = 64 << 20

// readSources counts the bytes of files just read against MaxSourceBytes.
func (lim *loadLimits) readSources(files map[string][]byte, what string) hcl.Diagnostics {
	for _, src := range files {
		lim.sourceBytes += int64(len(src))
	}
	if lim.sourceBytes <= MaxSourceBytes {
		return nil
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Spec too large",
		Detail:   fmt.Sprintf("Reading %s brings the spec's source to %d bytes, which exceeds the limit of %s; gpuform reads no spec this large.", what, lim.sourceBytes, readlimit.FormatSize(MaxSourceBytes)),
	}}
}

// countModule counts one module call against MaxModuleInstances.
func (lim *loadLimits) countModule(rng hcl.Range) hcl.Diagnostics {
	lim.modules++
	if lim.modules <= MaxModuleInstances {
		return nil
	}
	return hcl.Diagnostics{limitDiag(&LimitError{
		Summary: "Too many module instances",
		What:    fmt.Sprintf("This call brings the spec to %d module instances at all depths, which", lim.modules),
		Limit:   fmt.Sprintf("%d", MaxModuleInstances),
		Hint:    "modules that each call several others multiply; call fewer modules per level",
	}, rng)}
}
