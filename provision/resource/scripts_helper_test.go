package resource

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/nodesh"
)

// scriptCall is what a step runs: one of scripts/*.sh with its arguments.
type scriptCall struct {
	// Name is the script's file name ("apt_install.sh").
	Name string
	// Args are its positional parameters.
	Args []string
}

// String writes the call as a command line: the name, then each argument
// quoted as nodesh quotes it.
func (c scriptCall) String() string {
	if len(c.Args) == 0 {
		return c.Name
	}
	return c.Name + " " + strings.TrimSuffix(strings.TrimPrefix(nodesh.Args(c.Args...), "set -- "), "\n")
}

// stepScripts reads scripts/*.sh, by name.
func stepScripts(t testing.TB) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("scripts", "*.sh"))
	if err != nil || len(files) == 0 {
		t.Fatalf("scripts/*.sh: %v (%d files)", err, len(files))
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	return out
}

// callOf takes a step's script apart: it must be the prelude, libraries,
// one "set -- ..." line (or none) and one of scripts/*.sh that is not a
// library (*_lib.sh).
func callOf(t testing.TB, st Step) scriptCall {
	t.Helper()
	if !strings.HasPrefix(st.Script, nodesh.Prelude) {
		t.Fatalf("step %q does not start with the prelude:\n%s", st.Description, st.Script)
	}
	for name, body := range stepScripts(t) {
		if isLibrary(name) || !strings.HasSuffix(st.Script, body) {
			continue
		}
		head := strings.TrimSuffix(st.Script, body)
		i := strings.LastIndex(strings.TrimSuffix(head, "\n"), "\n")
		line := head[i+1:]
		if !strings.HasPrefix(line, "set -- ") {
			return scriptCall{Name: name}
		}
		args, ok := shellWords(strings.TrimSuffix(strings.TrimPrefix(line, "set -- "), "\n"))
		if !ok {
			t.Fatalf("step %q: cannot read its arguments: %s", st.Description, line)
		}
		return scriptCall{Name: name, Args: args}
	}
	t.Fatalf("step %q runs none of scripts/*.sh:\n%s", st.Description, st.Script)
	return scriptCall{}
}

// isLibrary reports whether scripts/name defines functions for the step
// scripts (file_lib.sh, effect_lib.sh) rather than being one.
func isLibrary(name string) bool { return strings.HasSuffix(name, "_lib.sh") }

// callsOf is callOf of each step, one call per line.
func callsOf(t testing.TB, steps []Step) string {
	t.Helper()
	var b strings.Builder
	for _, st := range steps {
		b.WriteString(callOf(t, st).String() + "\n")
	}
	return b.String()
}

// shellWords splits what transport.Quote wrote back into its words: bare
// words, '…' strings and \' between them, separated by single spaces. ok
// is false for anything else.
func shellWords(s string) (words []string, ok bool) {
	var w strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted:
			if c == '\'' {
				quoted = false
			} else {
				w.WriteByte(c)
			}
		case c == '\'':
			quoted, inWord = true, true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, false
			}
			i++
			w.WriteByte(s[i])
			inWord = true
		case c == ' ':
			if !inWord {
				return nil, false
			}
			words = append(words, w.String())
			w.Reset()
			inWord = false
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if quoted || !inWord {
		return nil, false
	}
	return append(words, w.String()), true
}

// effectsRun are the effects steps run to put a file into effect, each as
// apply_effect's arguments (the action, then its own): file_write.sh's
// after its ten fixed arguments and apply_effect.sh's, in step order.
func effectsRun(t testing.TB, steps []Step) [][]string {
	t.Helper()
	var out [][]string
	for _, st := range steps {
		c := callOf(t, st)
		switch {
		case c.Name == "file_write.sh" && len(c.Args) > fileWriteArgs:
			out = append(out, c.Args[fileWriteArgs:])
		case c.Name == "apply_effect.sh":
			out = append(out, c.Args)
		}
	}
	return out
}

// fileWriteArgs is how many arguments file_write.sh takes before the
// effect (PATH ... BACKUP_DIR).
const fileWriteArgs = 10
