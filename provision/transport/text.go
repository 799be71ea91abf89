package transport

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// hostLinePrefix starts every line of host text after the first, so that a
// host's output never begins a line of gpuform's own report.
const hostLinePrefix = "  | "

// HostText returns text that came from a host — its output, or an error
// quoting it — fit to print on a terminal inside one of gpuform's
// messages. A hostile or broken node must not be able to forge a report
// line ("\x1b[2K\rOK: all checks passed") or hide one, so every control
// character except tab (ESC, CR, backspace, NUL, DEL, the C1 controls),
// every invisible formatting or line-separator character (bidi overrides)
// and every byte that is not UTF-8 is written as a Go escape (\x1b, \r,
// \u202e, \xff), trailing newlines are dropped, and each remaining line
// break is followed by "  | ". Applying it twice changes nothing more.
//
// Every place where bytes from a host become human-readable text goes
// through it: HostError, apply's output excerpts, and the text renderers
// of verify and facts. JSON output needs no such care: encoding/json
// escapes control characters.
func HostText(s string) string {
	s = strings.TrimRight(s, "\n")
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i])>>4, 16) + strconv.FormatUint(uint64(s[i])&0xf, 16))
		case r == '\n':
			b.WriteByte('\n')
			if !strings.HasPrefix(s[i+1:], hostLinePrefix) {
				b.WriteString(hostLinePrefix)
			}
		case r == '\t':
			b.WriteByte('\t')
		case unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isPlain reports whether s is printable ASCII and tabs only, the common
// case, which HostText returns unchanged.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}
