package gres

import (
	"strings"

	"github.com/gpuform/gpuform/spec"
)

// ConfLine is one line of gres.conf as slurmd reads it: Slurm's config
// parser (src/common/parse_config.c) joins a line ending in "\" with the
// next, cuts a comment at "#" (not "\#"), and reads "Key=Value" pairs
// with blanks allowed around "=" ("Name = gpu"), a value quoted with
// double quotes when it holds blanks (Name="gpu"), and keys matched
// without regard to case (name=gpu). A gres.conf line is a GRES (Name=…),
// an AutoDetect=…, or either after NodeName=HOSTLIST, which applies it to
// those nodes only.
type ConfLine struct {
	// N is the number (from 1) of the line's first physical line.
	N int
	// Text is the line without its comment, blanks trimmed.
	Text string
	// Keys are its pairs by lower-cased key, quotes removed.
	Keys map[string]string
	// Unparsed is what is left that is no Key=Value pair (slurmd refuses
	// such a line); "" when the line parsed whole.
	Unparsed string
}

// ParseConf reads gres.conf content into its lines; blank and comment
// lines are left out.
func ParseConf(content string) []ConfLine {
	var out []ConfLine
	phys := strings.Split(content, "\n")
	for i := 0; i < len(phys); i++ {
		first := i
		var b strings.Builder
		for {
			l := strings.TrimSuffix(phys[i], "\r")
			l = stripComment(l)
			if strings.HasSuffix(l, "\\") && i+1 < len(phys) {
				b.WriteString(strings.TrimSuffix(l, "\\"))
				i++
				continue
			}
			b.WriteString(l)
			break
		}
		text := strings.TrimSpace(b.String())
		if text == "" {
			continue
		}
		keys, rest := parsePairs(text)
		out = append(out, ConfLine{N: first + 1, Text: text, Keys: keys, Unparsed: rest})
	}
	return out
}

// stripComment cuts l at its first "#" that is not escaped as "\#".
func stripComment(l string) string {
	for i := 0; i < len(l); i++ {
		if l[i] == '#' && (i == 0 || l[i-1] != '\\') {
			return l[:i]
		}
	}
	return l
}

// parsePairs reads Key=Value pairs the way parse_config.c's keyvalue
// pattern does: blanks, an alphanumeric key, blanks, an optional operator
// (+=, -=, *=, /=), "=", blanks, then a double-quoted value or a run of
// non-blanks. It stops at the first text that is no pair and returns it.
func parsePairs(s string) (map[string]string, string) {
	keys := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return keys, ""
		}
		k := 0
		for k < len(s) && isAlnum(s[k]) {
			k++
		}
		if k == 0 {
			return keys, s
		}
		key := strings.ToLower(s[:k])
		r := strings.TrimLeft(s[k:], " \t")
		if r != "" && strings.ContainsRune("+-*/", rune(r[0])) {
			r = r[1:]
		}
		if !strings.HasPrefix(r, "=") {
			return keys, s
		}
		r = strings.TrimLeft(r[1:], " \t")
		var val string
		if strings.HasPrefix(r, `"`) {
			end := strings.IndexByte(r[1:], '"')
			if end < 0 {
				return keys, s
			}
			val, r = r[1:1+end], r[2+end:]
		} else {
			end := strings.IndexAny(r, " \t")
			if end < 0 {
				end = len(r)
			}
			val, r = r[:end], r[end:]
		}
		if r != "" && r[0] != ' ' && r[0] != '\t' {
			return keys, s
		}
		keys[key] = val
		s = r
	}
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// DeclaresGPUs reports whether slurmd on host would take GPUs from the
// line: a GRES named gpu (in any case) or an AutoDetect setting, on a line
// with no NodeName or one whose host list holds host (its short name).
// A line gpuform cannot read is taken to declare GPUs when it mentions
// gpu or AutoDetect at all, and a NodeName list it cannot expand, or an
// unknown host, to hold host: a GPU counted twice is worse than a plan
// that asks the operator.
func (l ConfLine) DeclaresGPUs(host string) bool {
	_, name := l.Keys["name"]
	_, auto := l.Keys["autodetect"]
	gpu := name && strings.EqualFold(strings.TrimSpace(l.Keys["name"]), "gpu") || auto
	if l.Unparsed != "" {
		low := strings.ToLower(l.Text)
		gpu = gpu || strings.Contains(low, "gpu") || strings.Contains(low, "autodetect")
	}
	if !gpu {
		return false
	}
	nodes, ok := l.Keys["nodename"]
	if !ok || host == "" {
		return true
	}
	short, _, _ := strings.Cut(host, ".")
	hosts, err := spec.ExpandHostPattern(nodes)
	if err != nil {
		return true
	}
	for _, h := range hosts {
		if hs, _, _ := strings.Cut(h, "."); strings.EqualFold(hs, short) {
			return true
		}
	}
	return false
}
