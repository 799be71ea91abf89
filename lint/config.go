package lint

import (
	"fmt"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/spec"
)

// ruleUnknownRule is the engine's own rule: a suppression comment or a lint
// configuration names a rule that does not exist (usually a typo, which
// would otherwise silently leave the intended rule on).
const ruleUnknownRule = "lint_unknown_rule"

// lintUnknownRule declares the engine's own rule; the engine, not a
// Check, raises its findings.
func lintUnknownRule() Rule {
	return Rule{
		Name:     ruleUnknownRule,
		Severity: Warning,
		Summary:  "A gpuform-ignore comment or a lint rule block names a rule that does not exist.",
		// Check is nil: the engine raises this finding itself while it reads
		// suppressions and configuration.
	}
}

// ruleSetting is the resolved configuration of one rule.
type ruleSetting struct {
	enabled bool
	// def is the rule's declared severity; override is the configured one
	// (zero when not configured).
	def, override Severity
}

// effective returns the severity a finding reported at sev ends up with.
// A configured severity replaces the rule's own; a finding the rule already
// lowered (because it rests on unconfirmed data) is never raised by it.
func (s ruleSetting) effective(sev Severity) Severity {
	if s.override == 0 {
		return sev
	}
	if sev < s.def {
		return min(sev, s.override)
	}
	return s.override
}

// resolveSettings applies the spec's lint block and then the lint file to
// the catalogue's defaults.
func resolveSettings(rules []Rule, configs ...*spec.LintConfig) (map[string]ruleSetting, []Finding, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var findings []Finding
	settings := make(map[string]ruleSetting, len(rules))
	names := make([]string, 0, len(rules))
	var unknown *Rule
	for i, r := range rules {
		settings[r.Name] = ruleSetting{enabled: true, def: r.Severity}
		names = append(names, r.Name)
		if r.Name == ruleUnknownRule {
			unknown = &rules[i]
		}
	}
	for _, lc := range configs {
		if lc == nil {
			continue
		}
		for _, rc := range lc.Rules {
			if rc == nil {
				continue
			}
			name := rc.Name
			if now, ok := renamedRules()[name]; ok {
				findings = append(findings, renamedFinding(name, now, rc.NameRange))
				name = now
			}
			s, ok := settings[name]
			if !ok {
				findings = append(findings, Finding{
					Rule:     ruleUnknownRule,
					Severity: unknown.Severity,
					Summary:  fmt.Sprintf("Unknown lint rule %q", rc.Name),
					Detail:   "This rule block has no effect. " + suggestRule(rc.Name, names),
					Link:     DocsPath + "#" + ruleUnknownRule,
					Range:    rc.NameRange,
				})
				continue
			}
			if rc.Enabled.Set {
				s.enabled = rc.Enabled.V
			}
			if rc.Severity.Set {
				sev, ok := ParseSeverity(rc.Severity.V)
				if !ok {
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Invalid rule severity",
						Detail:   fmt.Sprintf("%q is not a severity; use \"error\", \"warning\" or \"info\".", rc.Severity.V),
						Subject:  rc.Severity.Range.Ptr(),
					})
				} else {
					s.override = sev
				}
			}
			settings[name] = s
		}
	}
	return settings, findings, diags
}

// renamedFinding asks to rename a rule that another rule now holds; the
// configuration or suppression applies to the new rule meanwhile.
func renamedFinding(old, now string, rng hcl.Range) Finding {
	return Finding{
		Rule:     ruleUnknownRule,
		Severity: Warning,
		Summary:  fmt.Sprintf("Lint rule %q is now part of %q", old, now),
		Detail:   fmt.Sprintf("gpuform applies this to %q, which checks what %q did and more. Write %q here.", now, old, now),
		Link:     DocsPath + "#" + now,
		Range:    rng,
	}
}

// suggestRule returns a "did you mean" sentence for a misspelt rule name, or
// a pointer to the catalogue when nothing is close (hcl's didyoumean.go uses
// the same distance and threshold).
func suggestRule(name string, names []string) string {
	best, bestDist := "", 4
	for _, n := range names {
		if d := levenshtein.Distance(name, n, nil); d < bestDist {
			best, bestDist = n, d
		}
	}
	if best != "" {
		return fmt.Sprintf("Did you mean %q?", best)
	}
	return "See " + DocsPath + " for the list of rules."
}
