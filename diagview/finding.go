package diagview

import "github.com/hashicorp/hcl/v2"

// Severity is how serious a finding is. The zero value is not valid.
// lint's Severity is this type, so findings need no conversion.
type Severity int

// Severities in increasing order of seriousness, so that comparing them
// answers "at or above --min-severity".
const (
	// Info is advice that never fails a run unless asked to.
	Info Severity = iota + 1
	// Warning is a likely problem, or one that rests on unconfirmed data.
	Warning
	// Error is a spec that will make the node broken or slow.
	Error
)

// String returns the lower-case name used in every output format.
func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Error:
		return "error"
	}
	return "unknown"
}

// Finding is one problem a rule found in a spec, anchored at the source range
// of the attribute or block that causes it. lint.Finding is this type.
type Finding struct {
	// Rule is the snake_case name of the rule that raised the finding.
	Rule string
	// Severity is the effective severity after lint configuration.
	Severity Severity
	// Summary is a one-line statement of the problem.
	Summary string
	// Detail says why it matters and what to do; may be empty.
	Detail string
	// Link points at the rule's documentation.
	Link string
	// Range is where the offending value is written.
	Range hcl.Range
}

// Rule describes a rule of the catalogue for SARIF's tool.driver.rules:
// what lint.Catalogue returns.
type Rule struct {
	// Name is the rule's snake_case identifier.
	Name string
	// Severity is the severity of a finding that rests on confirmed facts.
	Severity Severity
	// Summary is a one-line statement of what the rule checks.
	Summary string
	// Link points at the rule's documentation section.
	Link string
}
