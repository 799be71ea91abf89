package facts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/internal/text"
)

// parseShellAssignments reads KEY=VALUE lines as os-release(5) defines them:
// values may be unquoted, 'single' or "double" quoted with backslash escapes.
func parseShellAssignments(s string) map[string]string {
	return parseShellAssignmentsWith(s, nil)
}

// parseShellAssignmentsWith is parseShellAssignments that also expands $VAR
// and ${VAR} in unquoted and double-quoted values from env and from earlier
// lines, as the shell does when /etc/default/grub is sourced. Anything more
// elaborate (command substitution, conditionals) is left as text.
func parseShellAssignmentsWith(s string, env map[string]string) map[string]string {
	out := map[string]string{}
	lookup := func(name string) string {
		if v, ok := out[name]; ok {
			return v
		}
		return env[name]
	}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimPrefix(line, "export ")
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !text.IsIdent(k) {
			continue
		}
		out[k] = shellValue(v, env != nil, lookup)
	}
	return out
}

// shellValue unquotes one shell word (and stops at an unquoted '#' or space).
func shellValue(v string, expand bool, lookup func(string) string) string {
	var b strings.Builder
	quote := byte(0)
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				b.WriteByte(c)
			}
		case c == '\\' && i+1 < len(v) && (quote == 0 || strings.IndexByte("\"\\$`", v[i+1]) >= 0):
			i++
			b.WriteByte(v[i])
		case c == '"':
			if quote == '"' {
				quote = 0
			} else {
				quote = '"'
			}
		case c == '\'' && quote == 0:
			quote = '\''
		case c == '$' && expand:
			name, n := varRef(v[i+1:])
			if n == 0 {
				b.WriteByte(c)
				continue
			}
			b.WriteString(lookup(name))
			i += n
		case quote == 0 && (c == ' ' || c == '\t' || c == '#'):
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// varRef reads "NAME" or "{NAME}" at the start of s and returns the name and
// the bytes it used, or 0 when s starts no variable reference.
func varRef(s string) (string, int) {
	if strings.HasPrefix(s, "{") {
		end := strings.IndexByte(s, '}')
		if end > 1 && text.IsIdent(s[1:end]) {
			return s[1:end], end + 1
		}
		return "", 0
	}
	n := 0
	for n < len(s) && text.IsIdent(s[:n+1]) {
		n++
	}
	return s[:n], n
}

// decodeObject decodes a JSON object, keeping numbers as json.Number so a
// rewrite does not turn 65536 into 65536.0 or lose precision.
func decodeObject(s string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("not valid JSON: data after the object")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// cudaVersion reads the toolkit version from a CUDA version.json
// ({"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, ...}).
func cudaVersion(s string) (string, error) {
	var v struct {
		CUDA struct {
			Version string `json:"version"`
		} `json:"cuda"`
	}
	if err := json.NewDecoder(bytes.NewReader([]byte(s))).Decode(&v); err != nil {
		return "", fmt.Errorf("not valid JSON: %v", err)
	}
	if v.CUDA.Version == "" {
		return "", errors.New(`no "cuda"."version"`)
	}
	return v.CUDA.Version, nil
}

// parseTOMLKeys reads the simple "key = value" lines of a TOML file under
// their [table] headers. It is not a TOML parser: it serves the handful of
// scalar settings of the NVIDIA container runtime config that plan compares
// (mode, default runtime, no-cgroups, ldconfig), and keeps the raw text of
// anything else. Commented-out keys (the file ships with many) are skipped.
func parseTOMLKeys(s string) map[string]string {
	out := map[string]string{}
	table := ""
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			table = strings.Trim(line, "[] ")
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k = strings.Trim(strings.TrimSpace(k), `"`)
		v = strings.TrimSpace(v)
		switch {
		case strings.HasPrefix(v, `"`):
			if end := strings.IndexByte(v[1:], '"'); end >= 0 {
				v = v[1 : end+1]
			}
		case strings.HasPrefix(v, `'`):
			if end := strings.IndexByte(v[1:], '\''); end >= 0 {
				v = v[1 : end+1]
			}
		default:
			if i := strings.IndexByte(v, '#'); i >= 0 && !strings.HasPrefix(v, "[") {
				v = strings.TrimSpace(v[:i])
			}
		}
		if table != "" {
			k = table + "." + k
		}
		out[k] = v
	}
	return out
}
