package spec

import (
	"fmt"
	"strconv"
	"strings"
)

// maxHostsPerPattern bounds one pattern's expansion so that a typo like
// "gpu[1-99999999]" is an error rather than an out-of-memory.
const maxHostsPerPattern = 100000

// ExpandHostPattern expands a Slurm hostlist expression, the form
// SLURM_JOB_NODELIST takes: "gpu[001-004],gpu010" (commas outside
// brackets separate names), "gpu[1-4,7]", "a[1-2]b[1-2]" (several groups
// multiply, the last varying fastest), "gpu[001-032].dc1" (a suffix, which
// Slurm itself refuses but DNS names need). Leading zeros on a range's
// start fix the width of every number in that range. The result is in
// Slurm's order (scontrol show hostnames).
func ExpandHostPattern(pattern string) ([]string, error) {
	if strings.TrimSpace(pattern) != pattern || pattern == "" {
		return nil, fmt.Errorf("host %q is empty or has surrounding spaces", pattern)
	}
	parts := splitTopLevel(pattern)
	if len(parts) == 1 {
		return expandOne(pattern)
	}
	var out []string
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("host list %q has an empty name between commas", pattern)
		}
		hosts, err := expandOne(p)
		if err != nil {
			return nil, fmt.Errorf("host list %q: %w", pattern, err)
		}
		if len(out)+len(hosts) > maxHostsPerPattern {
			return nil, fmt.Errorf("host list %q expands to more than %d hosts", pattern, maxHostsPerPattern)
		}
		out = append(out, hosts...)
	}
	return out, nil
}

// splitTopLevel splits a hostlist at the commas outside brackets.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// expandOne expands one name of a hostlist (no comma outside brackets).
func expandOne(pattern string) ([]string, error) {
	if strings.TrimSpace(pattern) != pattern || pattern == "" {
		return nil, fmt.Errorf("host %q is empty or has surrounding spaces", pattern)
	}
	out := []string{""}
	rest := pattern
	for rest != "" {
		open := strings.IndexByte(rest, '[')
		closeIdx := strings.IndexByte(rest, ']')
		if open < 0 {
			if closeIdx >= 0 {
				return nil, fmt.Errorf("host pattern %q has a ']' without a matching '['", pattern)
			}
			out = appendSuffix(out, rest)
			break
		}
		if closeIdx >= 0 && closeIdx < open {
			return nil, fmt.Errorf("host pattern %q has a ']' without a matching '['", pattern)
		}
		out = appendSuffix(out, rest[:open])
		end := strings.IndexByte(rest[open:], ']')
		if end < 0 {
			return nil, fmt.Errorf("host pattern %q has a '[' that is never closed", pattern)
		}
		group := rest[open+1 : open+end]
		if strings.ContainsRune(group, '[') {
			return nil, fmt.Errorf("host pattern %q nests brackets", pattern)
		}
		items, err := expandRangeGroup(group)
		if err != nil {
			return nil, fmt.Errorf("host pattern %q: %w", pattern, err)
		}
		if len(out)*len(items) > maxHostsPerPattern {
			return nil, fmt.Errorf("host pattern %q expands to more than %d hosts", pattern, maxHostsPerPattern)
		}
		next := make([]string, 0, len(out)*len(items))
		for _, prefix := range out {
			for _, it := range items {
				next = append(next, prefix+it)
			}
		}
		out = next
		rest = rest[open+end+1:]
	}
	for _, h := range out {
		if err := checkHostName(h); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func appendSuffix(hosts []string, s string) []string {
	for i := range hosts {
		hosts[i] += s
	}
	return hosts
}

func expandRangeGroup(group string) ([]string, error) {
	if group == "" {
		return nil, fmt.Errorf("empty range \"[]\"")
	}
	var out []string
	for _, part := range strings.Split(group, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if lo == "" || (isRange && hi == "") {
			return nil, fmt.Errorf("range item %q must be a number or a range like 1-8", part)
		}
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("range item %q is not a number", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < 0 {
				return nil, fmt.Errorf("range item %q is not a number range", part)
			}
			if b < a {
				return nil, fmt.Errorf("range %q runs backwards", part)
			}
		}
		if b-a >= maxHostsPerPattern {
			return nil, fmt.Errorf("range %q is larger than %d hosts", part, maxHostsPerPattern)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		for n := a; n <= b; n++ {
			out = append(out, fmt.Sprintf("%0*d", width, n))
		}
	}
	return out, nil
}

// checkHostName refuses characters that have no place in a host name or a
// sim:// address, since host names are later handed to SSH and to logs.
func checkHostName(h string) error {
	if h == "" {
		return fmt.Errorf("empty host name")
	}
	// A leading dash reads as an option to ssh, scp or srun wherever a
	// host name ends up on a command line; no DNS name starts with one.
	if strings.HasPrefix(h, "-") {
		return fmt.Errorf("host %q starts with '-', which is not allowed in a host name", h)
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/@", r)) {
			return fmt.Errorf("host %q contains %q, which is not allowed in a host name", h, r)
		}
	}
	return nil
}
