// Package text holds the few string helpers that packages which must not
// import each other share (the facts probe, the local transport, apply,
// verify), so each exists once.
//
// It is not a place for domain logic: nothing here knows about hosts,
// specs or GPUs.
package text

import "strings"

// IsIdent reports whether s is a shell variable name (POSIX: a letter or
// underscore, then letters, digits and underscores), the names an
// environment passed to a remote shell may use.
func IsIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// FirstLine returns the first line of s that is not blank, without its
// surrounding space: the line to quote from a tool's output in one-line
// error messages.
func FirstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
