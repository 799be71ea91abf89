package transport

import "strings"

// Quote returns s as a single POSIX shell word. Every value that comes from a
// spec or from facts is passed through Quote before it is placed in a Script,
// even when it was validated before, so that validation is not the only wall.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if Bare(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Bare is whether every character of s is one Quote leaves unquoted
// (letters, digits and -_./:=+@%,); true for "" (which Quote writes as two single quotes).
func Bare(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("-_./:=+@%,", r)) {
			return false
		}
	}
	return true
}
