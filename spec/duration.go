package spec

import (
	"fmt"
	"time"
)

// Duration is the value of a duration attribute (step_timeout, drain_poll,
// confirm_delay): the text as the spec wrote it, which plans and records
// carry as written ("45m", never "45m0s"), and that text parsed once, when
// the spec is decoded, so that no consumer parses it again.
type Duration struct {
	// Text is the duration as written ("45m"); "" when unset.
	Text string
	// D is Text parsed.
	D time.Duration
}

// String is the duration as written, so that messages and the redactor
// see the spec's own text.
func (d Duration) String() string { return d.Text }

// minTimeout is the shortest step or probe timeout a spec may set.
const minTimeout = time.Second

// ParseTimeout reads text as a timeout such as step_timeout or
// drain_poll: a Go duration between 1s and 24h (maxTimeout). The spec
// decoder checks every timeout with it, and a plan file's rollout
// settings, which carry the spec's text, are read back with it.
func ParseTimeout(text string) (Duration, error) {
	d, ok := parseDuration(text, minTimeout, maxTimeout)
	if !ok {
		return Duration{}, fmt.Errorf("%q is not a duration between 1s and 24h", text)
	}
	return d, nil
}

// parseDuration reads text as a Go duration within [min, max].
func parseDuration(text string, min, max time.Duration) (Duration, bool) {
	d, err := time.ParseDuration(text)
	if err != nil || d < min || d > max {
		return Duration{}, false
	}
	return Duration{Text: text, D: d}, true
}

// durationAttr is a parsed as a duration within [min, max]; ok is false,
// and the result unset, when a is set and is not one. The caller reports
// that with its own message.
func durationAttr(a Attr[string], min, max time.Duration) (out Attr[Duration], ok bool) {
	out = Attr[Duration]{Range: a.Range, Sensitive: a.Sensitive}
	if !a.Set {
		return out, true
	}
	d, ok := parseDuration(a.V, min, max)
	if !ok {
		return out, false
	}
	out.V, out.Set = d, true
	return out, true
}
