package kb

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// Tri is a three-valued answer: a knowledge-base question can be answered
// yes, no, or "the tables do not say". The zero value is Unknown.
type Tri uint8

const (
	// Unknown: the knowledge base cannot answer.
	Unknown Tri = iota
	// Yes: the fact holds.
	Yes
	// No: the fact does not hold.
	No
)

// String returns "unknown", "yes" or "no".
func (t Tri) String() string {
	switch t {
	case Yes:
		return "yes"
	case No:
		return "no"
	}
	return "unknown"
}

// versionToken matches a dotted version at the start of a cell.
var versionToken = lazyre.New(`^v?[0-9]+(\.[0-9]+)*(\.x)?`)

// isUnknownCell reports whether a value cell says that nothing is known.
func isUnknownCell(cell string) bool {
	c := strings.ToLower(strings.TrimSpace(cell))
	for _, p := range []string{"", "unconfirmed", "n/a", "not read", "not captured", "not named", "not listed", "see nvidia", "none", "not applicable"} {
		if p == "" && c == "" {
			return true
		}
		if p != "" && strings.HasPrefix(c, p) {
			return true
		}
	}
	return false
}

// leadingVersion reads the version a value cell starts with (after an
// optional ">="), such as ">=595.71.05", "12.2.2 (12.2.2.009)" or
// "610.43.02 (unconfirmed)". ok is false when the cell states no value.
// driver selects driver exactness rules.
func leadingVersion(cell string, driver bool) (v Version, ok bool, err error) {
	c := strings.TrimSpace(cell)
	c = strings.TrimPrefix(c, ">=")
	c = strings.TrimSpace(c)
	if isUnknownCell(c) {
		return Version{}, false, nil
	}
	tok := versionToken.FindString(c)
	if tok == "" {
		return Version{}, false, fmt.Errorf("cell %q does not start with a version", cell)
	}
	// The version must end at a word boundary: "595,58" is a typo, not
	// branch 595.
	if rest := c[len(tok):]; rest != "" && rest[0] != ' ' && rest[0] != '(' {
		return Version{}, false, fmt.Errorf("cell %q: version %q is followed by %q", cell, tok, rest[:1])
	}
	if driver {
		v, err = ParseDriverVersion(tok)
	} else {
		v, err = ParseVersion(tok)
	}
	if err != nil {
		return Version{}, false, err
	}
	return v, true, nil
}

// cellStatus is the status of a value cell: the column's status, weakened by
// any "(unconfirmed)" or "(secondary…)" written right in the cell.
func cellStatus(cell string, column Status) Status {
	if st, ok := inlineStatus(cell); ok {
		return column.Weaker(st)
	}
	return column
}

// parseAt reads a gpuform "value@status" cell of a kb_ column. An empty cell
// is ("", StatusUnknown).
func parseAt(cell string) (string, Status, error) {
	if strings.TrimSpace(cell) == "" {
		return "", StatusUnknown, nil
	}
	i := strings.LastIndexByte(cell, '@')
	if i < 0 {
		return "", StatusUnknown, fmt.Errorf("cell %q: want value@status", cell)
	}
	st, err := ParseStatus(cell[i+1:])
	if err != nil {
		return "", StatusUnknown, err
	}
	return strings.TrimSpace(cell[:i]), st, nil
}

// leadingNumber reads the decimal number a cell starts with, after an
// optional "~": "460", "~340 (average…)", "834.57 (out-of-place…)".
func leadingNumber(cell string) (float64, bool) {
	c := strings.TrimPrefix(strings.TrimSpace(cell), "~")
	end := 0
	for end < len(c) && (c[end] >= '0' && c[end] <= '9' || c[end] == '.') {
		end++
	}
	if end == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(c[:end], 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

// leadingWord returns the lower-cased cell up to the first "(" or ";",
// trimmed: "yes (DGX A100 …)" → "yes", "open required (secondary…)" →
// "open required".
func leadingWord(cell string) string {
	c := strings.ToLower(cell)
	if i := strings.IndexAny(c, "(;"); i >= 0 {
		c = c[:i]
	}
	return strings.TrimSpace(c)
}
