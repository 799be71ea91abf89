package kb

import (
	"fmt"
	"strings"
)

// Status says how well a fact is established. The values are ordered from
// weakest to strongest, so the weaker of two statuses is the smaller one.
// The zero value, StatusUnknown, means the knowledge base holds no value.
type Status uint8

const (
	// StatusUnknown: the knowledge base has no value for this fact.
	StatusUnknown Status = iota
	// Unconfirmed: a lead only; a rule must not raise an error on it.
	Unconfirmed
	// Secondary: stated by a third party restating NVIDIA material.
	Secondary
	// Derived: computed from confirmed data.
	Derived
	// Confirmed: read in the cited NVIDIA or upstream page or file (or seen in
	// real tool output in a cited public issue).
	Confirmed
)

// String returns the status word used in the data files.
func (s Status) String() string {
	switch s {
	case Unconfirmed:
		return "unconfirmed"
	case Secondary:
		return "secondary"
	case Derived:
		return "derived"
	case Confirmed:
		return "confirmed"
	}
	return "unknown"
}

// CanBeError reports whether a lint finding resting on this fact may be an
// error: only confirmed and derived facts can (issue 3, item 4). A finding on
// weaker data is a warning that names the status.
func (s Status) CanBeError() bool { return s == Confirmed || s == Derived }

// Weaker returns the weaker of s and o.
func (s Status) Weaker(o Status) Status {
	if o < s {
		return o
	}
	return s
}

// ParseStatus reads a status cell of the reference tables. The cells are
// prose: "confirmed (observed)", "secondary (third-party classification)",
// "confirmed (cuda12.8) / unconfirmed (others)". A cell that joins several
// statuses with "/" or ";" yields the weakest of them, because a single
// answer cannot tell which part it rests on. "partially confirmed" is read as
// Secondary: part of it was not checked against NVIDIA's page, so it may not
// carry an error.
func ParseStatus(cell string) (Status, error) {
	c := strings.ToLower(strings.TrimSpace(cell))
	if c == "" {
		return StatusUnknown, fmt.Errorf("empty status")
	}
	parts := strings.FieldsFunc(c, func(r rune) bool { return r == '/' || r == ';' })
	result, ok := leadingStatus(parts[0])
	if !ok {
		return StatusUnknown, fmt.Errorf("status %q: does not start with confirmed, derived, secondary or unconfirmed", cell)
	}
	// Later parts count only when they start with a status word: text after a
	// "/" or ";" inside a parenthesised remark is not a status of its own.
	for _, part := range parts[1:] {
		if st, ok := leadingStatus(part); ok {
			result = result.Weaker(st)
		}
	}
	return result, nil
}

// leadingStatus reads the status word at the start of s.
func leadingStatus(s string) (Status, bool) {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "partially confirmed"):
		return Secondary, true
	case strings.HasPrefix(s, "confirmed"):
		return Confirmed, true
	case strings.HasPrefix(s, "derived"):
		return Derived, true
	case strings.HasPrefix(s, "secondary"):
		return Secondary, true
	case strings.HasPrefix(s, "unconfirmed"):
		return Unconfirmed, true
	}
	return StatusUnknown, false
}

// inlineStatus finds a qualifier written inside a value cell, such as
// "610.43.02 (unconfirmed)" or "1.8 TB/s (secondary)", and returns it; ok is
// false when the cell carries none. Only qualifiers in parentheses count, so
// the word "unconfirmed" inside a longer sentence does not.
func inlineStatus(cell string) (Status, bool) {
	c := strings.ToLower(cell)
	weakest, found := Confirmed, false
	for {
		i := strings.IndexByte(c, '(')
		if i < 0 {
			break
		}
		c = c[i+1:]
		if st, ok := leadingStatus(c); ok {
			weakest, found = weakest.Weaker(st), true
		}
	}
	return weakest, found
}

// Fact is where an answer comes from: its status, the public sources of the
// table row, the data file and line it was read from, and the row's note.
type Fact struct {
	// Status is how well the answer is established.
	Status Status
	// Sources are the public URLs (or URL plus a short locator) of the row.
	Sources []string
	// File is the data file under kb/data the row is in.
	File string
	// Line is the 1-based line of the row in File.
	Line int
	// Note is the row's free-text note, if any; rules may quote it.
	Note string
}

// Source returns the first source of the fact, the one to cite in a
// one-line message; "" when there is none.
func (f Fact) Source() string {
	if len(f.Sources) == 0 {
		return ""
	}
	return f.Sources[0]
}

// Known reports whether the fact holds any value at all.
func (f Fact) Known() bool { return f.Status != StatusUnknown }

// Where returns "file:line" for messages and test failures.
func (f Fact) Where() string { return fmt.Sprintf("%s:%d", f.File, f.Line) }

// preferSource returns f with the first source that contains one of the
// given substrings (tried in order) moved to the front, so that Source()
// cites the page a field comes from rather than the row's first URL. The
// gpu-models rows list a dozen sources for a dozen columns.
func (f Fact) preferSource(subs ...string) Fact {
	for _, sub := range subs {
		for i, s := range f.Sources {
			if strings.Contains(s, sub) {
				if i == 0 {
					return f
				}
				out := make([]string, 0, len(f.Sources))
				out = append(out, s)
				out = append(out, f.Sources[:i]...)
				out = append(out, f.Sources[i+1:]...)
				f.Sources = out
				return f
			}
		}
	}
	return f
}

// withStatus returns f with its status replaced.
func (f Fact) withStatus(s Status) Fact {
	f.Status = s
	return f
}

// splitSources splits a sources cell ("url1 ; url2 (Table 3)") into its parts.
// Parts that are "not read: url" stay as written, so a reader sees that the
// page was not read.
func splitSources(cell string) []string {
	var out []string
	for _, p := range strings.Split(cell, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
