package lint

import (
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
)

// Options are the lint-time inputs that are not part of the spec.
type Options struct {
	// MinSeverity is the failure threshold (--min-severity): Result.Failed
	// reports findings at or above it. Zero means Error. It never hides
	// findings; every finding is still returned and rendered.
	MinSeverity Severity
	// Now is the moment end-of-life dates are compared against. Zero means
	// the current time; tests pass a fixed instant so results do not age.
	Now time.Time
	// Config is the lint configuration read from a .gpuform-lint.hcl file
	// (spec.LoadLintFile); nil when there is none. It is applied after the
	// spec's own lint block, so the file given on the command line wins.
	Config *spec.LintConfig
	// Pins are exact releases recorded in the lock file; a floating version
	// in the spec that the lock file pins is not a finding.
	Pins Pins
	// KB is the knowledge base the rules answer from (kb.Load: the tables
	// embedded in the binary), parsed once by the caller; Run reports an
	// error without it.
	KB *kb.KB
}

// Result is the outcome of one lint run.
type Result struct {
	// Findings are the unsuppressed findings, sorted by file, line, column
	// and rule, without duplicates.
	Findings []Finding
	// Suppressed are findings silenced by a gpuform-ignore comment, sorted
	// the same way; they are never rendered but can be counted.
	Suppressed []Finding
	// MinSeverity is the failure threshold the run was given (never zero).
	MinSeverity Severity
}

// HasAtOrAbove reports whether any finding is at least as severe as sev.
func (r Result) HasAtOrAbove(sev Severity) bool {
	for _, f := range r.Findings {
		if f.Severity >= sev {
			return true
		}
	}
	return false
}

// Failed reports whether the run has findings at or above its MinSeverity,
// which is what makes `gpuform lint` exit with 2.
func (r Result) Failed() bool { return r.HasAtOrAbove(r.minSeverity()) }

// Count returns how many findings have exactly severity sev.
func (r Result) Count(sev Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == sev {
			n++
		}
	}
	return n
}

func (r Result) minSeverity() Severity {
	if r.MinSeverity == 0 {
		return Error
	}
	return r.MinSeverity
}

// ExitCode maps a lint run to the exit-code contract (docs/design.md,
// "Exit codes"): 1 when
// the spec (or the lint configuration) has error diagnostics, since then
// lint could not do its whole job; 2 when findings reach the threshold;
// 0 otherwise.
func ExitCode(r Result, diags hcl.Diagnostics) int {
	switch {
	case diags.HasErrors():
		return 1
	case r.Failed():
		return 2
	}
	return 0
}

// Run lints cfg. cfg may be partial (the loader returns what it could decode
// together with its errors); rules skip whatever is missing. The returned
// diagnostics are problems with the lint configuration itself (an invalid
// severity) or an internal failure of a rule, never findings.
func Run(cfg *spec.Config, opts Options) (Result, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	res := Result{MinSeverity: opts.MinSeverity}
	if res.MinSeverity == 0 {
		res.MinSeverity = Error
	}
	if cfg == nil {
		return res, diags
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}

	if opts.KB == nil {
		return res, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No knowledge base", Detail: "lint.Run was given no knowledge base (Options.KB); this is a bug in gpuform."})
	}
	rules := Rules()
	settings, findings, moreDiags := resolveSettings(rules, cfg.Lint, opts.Config)
	diags = append(diags, moreDiags...)

	for i := range rules {
		r := &rules[i]
		s := settings[r.Name]
		if r.Check == nil || !s.enabled {
			continue
		}
		ctx := &Context{Config: cfg, Now: now, KB: opts.KB, pins: opts.Pins, rule: r}
		if d := runRule(r, ctx); d != nil {
			diags = append(diags, d)
		}
		findings = append(findings, ctx.findings...)
	}

	annotations, annFindings := collectAnnotations(cfg, rules)
	if settings[ruleUnknownRule].enabled {
		findings = append(findings, annFindings...)
	}

	// Rules quote the values they judge; those derived from a sensitive
	// variable are replaced, whatever their length.
	red := cfg.Redactor()
	for _, f := range findings {
		f.Summary, f.Detail = red.Redact(f.Summary), red.Redact(f.Detail)
		s := settings[f.Rule]
		f.Severity = s.effective(f.Severity)
		if f.Rule != ruleUnknownRule && annotations.suppresses(f) {
			res.Suppressed = append(res.Suppressed, f)
			continue
		}
		res.Findings = append(res.Findings, f)
	}
	res.Findings = sortFindings(res.Findings)
	res.Suppressed = sortFindings(res.Suppressed)
	return res, diags
}

// runRule calls a rule's check, turning a panic (a bug in gpuform, never the
// user's fault) into an error diagnostic so one broken rule cannot hide the
// findings of all the others.
func runRule(r *Rule, ctx *Context) (d *hcl.Diagnostic) {
	defer func() {
		if p := recover(); p != nil {
			d = &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Internal error in lint rule %s", r.Name),
				Detail:   fmt.Sprintf("The rule failed with: %v. This is a bug in gpuform; please report it with the spec that triggers it. Disable the rule with lint { rule %q { enabled = false } } to go on.", p, r.Name),
			}
		}
	}()
	r.Check(ctx)
	return nil
}

// sortFindings orders findings by file, line, column, rule and message, and
// drops exact duplicates (several nodes that share one hardware module
// would otherwise report the same range many times).
func sortFindings(fs []Finding) []Finding {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		switch {
		case a.Range.Filename != b.Range.Filename:
			return a.Range.Filename < b.Range.Filename
		case a.Range.Start.Line != b.Range.Start.Line:
			return a.Range.Start.Line < b.Range.Start.Line
		case a.Range.Start.Column != b.Range.Start.Column:
			return a.Range.Start.Column < b.Range.Start.Column
		case a.Rule != b.Rule:
			return a.Rule < b.Rule
		case a.Summary != b.Summary:
			return a.Summary < b.Summary
		}
		return a.Severity > b.Severity
	})
	out := fs[:0]
	for i, f := range fs {
		if i > 0 {
			p := out[len(out)-1]
			if p.Rule == f.Rule && p.Range == f.Range && p.Summary == f.Summary {
				continue
			}
		}
		out = append(out, f)
	}
	return out
}
