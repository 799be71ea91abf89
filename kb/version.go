package kb

import (
	"fmt"
	"strconv"
	"strings"
)

// maxVersionParts is the most dotted components a Version keeps. NGC images
// report CUDA as four components (12.5.0.23); nothing we read has more.
const maxVersionParts = 4

// Version is a dotted numeric version such as a driver ("550.127.08", "570.26",
// or the floating branch "550"), a CUDA toolkit ("12.4.1"), NCCL ("2.21.5") or
// container toolkit release ("1.17.3"). The zero value is "no version" and
// reports IsZero. Versions are compared with Compare, not ==, because "12.4"
// and "12.4.0" compare equal while naming different things (a minor series and
// one release).
type Version struct {
	parts [maxVersionParts]int
	// text is the components as written ("550.127.08"), without any "v",
	// "R" or ".x" decoration: driver package versions keep the leading zero.
	text string
	n    uint8
	// exactAt is how many components make this kind of version name a
	// single release: 2 for drivers (570.26 is a release), 3 otherwise.
	exactAt uint8
}

// ParseVersion reads a CUDA, NCCL, container toolkit or other three-part
// release version: one to four dot-separated non-negative integers, with an
// optional leading "v" and an optional trailing ".x" or ".*" wildcard ("2.26.x"
// is the floating series 2.26). It is exact when it has three or more parts.
func ParseVersion(s string) (Version, error) {
	return parseVersion(s, 3)
}

// ParseDriverVersion reads an NVIDIA driver version: "550.127.08", "570.26",
// or a floating branch "550" (also written "R550" or "r550"). Driver releases
// have two or three parts, so it is exact when it has two or more parts.
func ParseDriverVersion(s string) (Version, error) {
	t := strings.TrimSpace(s)
	if len(t) > 1 && (t[0] == 'R' || t[0] == 'r') && t[1] >= '0' && t[1] <= '9' {
		t = t[1:]
	}
	v, err := parseVersion(t, 2)
	if err != nil {
		return Version{}, fmt.Errorf("driver version %q: %w", s, errInner(err))
	}
	return v, nil
}

// errInner strips the "version %q: " prefix parseVersion adds, so that
// ParseDriverVersion can name the original text once.
func errInner(err error) error {
	if e, ok := err.(*versionError); ok {
		return e.reason
	}
	return err
}

type versionError struct {
	text   string
	reason error
}

func (e *versionError) Error() string { return fmt.Sprintf("version %q: %v", e.text, e.reason) }
func (e *versionError) Unwrap() error { return e.reason }

func parseVersion(s string, exactAt uint8) (Version, error) {
	t := strings.TrimSpace(s)
	fail := func(format string, args ...any) (Version, error) {
		return Version{}, &versionError{text: s, reason: fmt.Errorf(format, args...)}
	}
	if t == "" {
		return fail("empty")
	}
	if t[0] == 'v' || t[0] == 'V' {
		t = t[1:]
	}
	if strings.HasSuffix(t, ".x") || strings.HasSuffix(t, ".X") || strings.HasSuffix(t, ".*") {
		t = t[:len(t)-2]
	}
	fields := strings.Split(t, ".")
	if len(fields) > maxVersionParts {
		return fail("more than %d components", maxVersionParts)
	}
	var v Version
	for i, f := range fields {
		if f == "" {
			return fail("empty component")
		}
		if len(f) > 9 {
			return fail("component %q too long", f)
		}
		for _, r := range f {
			if r < '0' || r > '9' {
				return fail("component %q is not a number", f)
			}
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return fail("component %q: %v", f, err)
		}
		v.parts[i] = n
	}
	v.n = uint8(len(fields))
	v.text = t
	v.exactAt = exactAt
	return v, nil
}

// IsZero reports whether v holds no version.
func (v Version) IsZero() bool { return v.n == 0 }

// Len is the number of components written: 1 for "550", 3 for "12.4.1".
func (v Version) Len() int { return int(v.n) }

// IsExact reports whether v names one release rather than a floating series:
// a driver needs at least two components ("570.26"; "550" is a branch), any
// other version at least three ("12.4.1"; "12.4" floats over its updates).
func (v Version) IsExact() bool { return v.n > 0 && v.n >= v.exactAt }

// Part returns component i (0-based), or 0 when v has fewer components.
func (v Version) Part(i int) int {
	if i < 0 || i >= int(v.n) {
		return 0
	}
	return v.parts[i]
}

// Major is the first component: the branch of a driver, the major of CUDA.
func (v Version) Major() int { return v.Part(0) }

// Minor is the second component, 0 when absent.
func (v Version) Minor() int { return v.Part(1) }

// Patch is the third component, 0 when absent.
func (v Version) Patch() int { return v.Part(2) }

// Branch is the driver branch of a driver version (its first component).
func (v Version) Branch() int { return v.Part(0) }

// Truncate returns v cut to its first n components (12.4.1 → 12.4 for n=2).
// The result keeps v's exactness rule.
func (v Version) Truncate(n int) Version {
	if n < 0 {
		n = 0
	}
	if n >= int(v.n) {
		return v
	}
	w := v
	for i := n; i < maxVersionParts; i++ {
		w.parts[i] = 0
	}
	w.n = uint8(n)
	w.text = strings.Join(strings.SplitN(v.text, ".", n+1)[:n], ".")
	return w
}

// Compare orders versions component by component, treating missing components
// as zero: it returns -1, 0 or +1. "12.4" and "12.4.0" compare equal.
func (v Version) Compare(o Version) int {
	for i := 0; i < maxVersionParts; i++ {
		a, b := v.parts[i], o.parts[i]
		if a < b {
			return -1
		}
		if a > b {
			return 1
		}
	}
	return 0
}

// Less reports whether v sorts before o.
func (v Version) Less(o Version) bool { return v.Compare(o) < 0 }

// Within reports whether v falls inside the series named by prefix: 12.4.1 is
// within 12.4 and within 12, not within 12.5. An exact prefix contains only
// versions equal to itself in the components it has.
func (v Version) Within(prefix Version) bool {
	if prefix.n > v.n {
		return false
	}
	for i := 0; i < int(prefix.n); i++ {
		if v.parts[i] != prefix.parts[i] {
			return false
		}
	}
	return true
}

// String returns the version as written, without decoration: "550.127.08"
// keeps its leading zero, "v1.14.0" is "1.14.0", "R550" is "550".
func (v Version) String() string { return v.text }
