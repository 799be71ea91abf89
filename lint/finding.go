package lint

import (
	"github.com/gpuform/gpuform/diagview"
)

// Severity is how serious a finding is. The zero value is not valid. It
// is diagview's, so the writers of every output format take findings as
// they are.
type Severity = diagview.Severity

// Severities in increasing order of seriousness, so that comparing them
// answers "at or above --min-severity".
const (
	// Info is advice that never fails a run unless asked to.
	Info = diagview.Info
	// Warning is a likely problem, or one that rests on unconfirmed data.
	Warning = diagview.Warning
	// Error is a spec that will make the node broken or slow.
	Error = diagview.Error
)

// ParseSeverity reads "error", "warning" or "info".
func ParseSeverity(s string) (Severity, bool) {
	switch s {
	case "error":
		return Error, true
	case "warning":
		return Warning, true
	case "info", "notice":
		return Info, true
	}
	return 0, false
}

// Finding is one problem a rule found in a spec, anchored at the source range
// of the attribute or block that causes it (Rule, Severity, Summary, Detail,
// Link, Range): diagview's Finding, which every output format renders.
type Finding = diagview.Finding
