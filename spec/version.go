package spec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// Version is a software version as written in a spec: "550.127.08",
// "12.4.1", "2.21.5-1", or a floating branch such as "550". It keeps the
// written text, because package versions are matched textually ("08" is not
// "8" in a package name), and its numeric parts for ordering.
type Version struct {
	// Raw is the text as written.
	Raw string
	// Parts are the numeric dot-separated components before any suffix.
	Parts []int
	// Suffix is what follows a '-' (a package revision such as "1"), if any.
	Suffix string
}

// versionPattern is deliberately strict: versions end up in package-manager
// command lines, so anything that is not digits, dots and a short
// alphanumeric revision is refused before a command is ever built.
var versionPattern = lazyre.New(`^[0-9]{1,6}(\.[0-9]{1,6}){0,3}(-[0-9A-Za-z][0-9A-Za-z.~+]{0,31})?$`)

// ParseVersion validates s and splits it into parts.
func ParseVersion(s string) (Version, error) {
	if !versionPattern.MatchString(s) {
		return Version{}, fmt.Errorf("%q is not a version: write digits separated by dots, like \"550.127.08\" or \"12.4.1\"", s)
	}
	v := Version{Raw: s}
	main := s
	if i := strings.IndexByte(s, '-'); i >= 0 {
		main, v.Suffix = s[:i], s[i+1:]
	}
	for _, p := range strings.Split(main, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			return Version{}, fmt.Errorf("%q is not a version", s)
		}
		v.Parts = append(v.Parts, n)
	}
	return v, nil
}

// String returns the version as written.
func (v Version) String() string { return v.Raw }

// IsZero reports whether no version was given.
func (v Version) IsZero() bool { return v.Raw == "" }

// Major returns the first component (the driver branch for drivers).
func (v Version) Major() int {
	if len(v.Parts) == 0 {
		return 0
	}
	return v.Parts[0]
}

// Minor returns the second component, or 0.
func (v Version) Minor() int {
	if len(v.Parts) < 2 {
		return 0
	}
	return v.Parts[1]
}

// Compare orders versions by numeric components; missing components count as
// zero. Suffixes are not ordered.
func (v Version) Compare(o Version) int {
	n := max(len(v.Parts), len(o.Parts))
	for i := 0; i < n; i++ {
		a, b := 0, 0
		if i < len(v.Parts) {
			a = v.Parts[i]
		}
		if i < len(o.Parts) {
			b = o.Parts[i]
		}
		if a != b {
			if a < b {
				return -1
			}
			return 1
		}
	}
	return 0
}
