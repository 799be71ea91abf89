package docs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// A transcript is a console example of the documentation, run against the
// built binary as Go's testscript runs its scripts, so the docs cannot
// drift from what gpuform prints (issue 34). The convention, in
// docs/development.md ("Examples in the docs"):
//
//   - a fenced block whose info string is `console` is checked; `sh`,
//     `text` and unmarked blocks are not;
//   - in it, a line `$ gpuform ARGS` runs the binary (in a directory
//     holding a fresh copy of examples/, so `examples/NAME` means what it
//     does at the repository root and a lock the page writes lands in the
//     copy; on simulated hosts only: a fresh GPUFORM_SIM_STATE per page,
//     shared by the page's blocks in order, so an apply in one block is
//     seen by the plan in the next); a `# comment` at the end is dropped;
//   - the lines after it, up to the next `$ ` line or the block's end, are
//     its expected output: each must appear in what the command wrote to
//     stdout and stderr, in that order, other lines may come between; `…`
//     in a line stands for any text (a time, a hash), a line that is only
//     `…` for lines left out;
//   - a block that cannot run (real hosts, a registry, a GPU) is marked by
//     the line `<!-- transcript: skip REASON -->` just before its fence.
type transcript struct {
	file string // relative to the repository root
	line int    // of the fence
	cmds []transcriptCmd
	skip string
}

type transcriptCmd struct {
	line int
	args []string
	want []string
}

var skipMark = regexp.MustCompile(`^<!-- transcript: skip (.+?) -->$`)

// parseTranscripts reads the console blocks of one Markdown file.
func parseTranscripts(file string, text []byte) ([]transcript, error) {
	var out []transcript
	lines := strings.Split(string(text), "\n")
	var cur *transcript
	inFence := false
	prev := ""
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			if !inFence {
				inFence = true
				if strings.TrimSpace(strings.TrimPrefix(trimmed, "```")) == "console" {
					cur = &transcript{file: file, line: i + 1}
					if m := skipMark.FindStringSubmatch(prev); m != nil {
						cur.skip = m[1]
					}
				}
			} else {
				inFence = false
				if cur != nil {
					out = append(out, *cur)
					cur = nil
				}
			}
			prev = trimmed
			continue
		}
		if trimmed != "" {
			prev = trimmed
		}
		if cur == nil {
			continue
		}
		if strings.HasPrefix(trimmed, "$ ") {
			args, err := shellWords(stripComment(strings.TrimPrefix(trimmed, "$ ")))
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", file, i+1, err)
			}
			if len(args) == 0 || args[0] != "gpuform" {
				return nil, fmt.Errorf("%s:%d: a console example runs gpuform only (`$ gpuform …`); write other commands in an sh block", file, i+1)
			}
			cur.cmds = append(cur.cmds, transcriptCmd{line: i + 1, args: args[1:]})
			continue
		}
		if len(cur.cmds) == 0 {
			if trimmed != "" {
				return nil, fmt.Errorf("%s:%d: a console block starts with a `$ gpuform …` line", file, i+1)
			}
			continue
		}
		if trimmed != "" {
			c := &cur.cmds[len(cur.cmds)-1]
			c.want = append(c.want, strings.TrimRight(l, " \t"))
		}
	}
	if inFence {
		return nil, fmt.Errorf("%s: unterminated code block", file)
	}
	return out, nil
}

// stripComment drops a trailing "# …" that follows a space outside quotes.
func stripComment(s string) string {
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && i > 0 && (s[i-1] == ' ' || s[i-1] == '\t'):
			return strings.TrimSpace(s[:i])
		}
	}
	return strings.TrimSpace(s)
}

// shellWords splits a command line as sh does for the plain words, single
// and double quotes the docs use; anything else (a pipe, a variable) is
// refused, since the example would not be what runs.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				w.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		case strings.IndexByte("|&;<>$`\\*?(){}", c) >= 0:
			return nil, fmt.Errorf("%q: a console example is one plain command (no %q)", s, c)
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q: unterminated quote", s)
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}

// matchOutput checks that every wanted line appears in got, in order; "…"
// in a wanted line matches any text. It returns the first line it could
// not find.
func matchOutput(want []string, got string) (missing string, ok bool) {
	lines := strings.Split(got, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " \t\r")
	}
	at := 0
	for _, w := range want {
		if strings.TrimSpace(w) == "…" {
			continue
		}
		parts := strings.Split(w, "…")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re := regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
		found := false
		for at < len(lines) {
			l := lines[at]
			at++
			if re.MatchString(l) {
				found = true
				break
			}
		}
		if !found {
			return w, false
		}
	}
	return "", true
}

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// gpuformBinary builds cmd/gpuform once for the test binary's run.
func gpuformBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gpuform-transcript-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "gpuform")
		cmd := exec.Command("go", "build", "-o", binaryPath, "./cmd/gpuform")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			binaryErr = fmt.Errorf("go build ./cmd/gpuform: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// markdownFiles are README.md and every page under docs/.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestDocsTranscripts runs every console example of README.md and
// docs/**/*.md against the built binary, one page per subtest in
// parallel, and fails naming the page, the line and the output line that
// is not printed any more.
func TestDocsTranscripts(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	pages := map[string][]transcript{}
	var order []string
	for _, f := range markdownFiles(t, root) {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		ts, err := parseTranscripts(f, b)
		if err != nil {
			t.Error(err)
			continue
		}
		if len(ts) > 0 {
			pages[f] = ts
			order = append(order, f)
		}
	}
	if len(order) == 0 {
		t.Fatal("no console example in README.md or docs/: the parser found none")
	}
	bin := gpuformBinary(t)
	for _, f := range order {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			sim := filepath.Join(home, "sim")
			if err := os.Mkdir(sim, 0o700); err != nil {
				t.Fatal(err)
			}
			// The page runs in a copy of examples/, so a command that
			// writes into its spec directory (lock writes
			// DIR/.gpuform.lock.hcl) changes the copy, never the
			// repository, and no page sees another's writes.
			work := filepath.Join(home, "work")
			if err := copyTree(filepath.Join(root, "examples"), filepath.Join(work, "examples")); err != nil {
				t.Fatal(err)
			}
			env := []string{"HOME=" + home, "GPUFORM_SIM_STATE=" + sim, "NO_COLOR=1", "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}
			for _, tr := range pages[f] {
				if tr.skip != "" {
					continue
				}
				for _, c := range tr.cmds {
					out, err := runTranscript(bin, work, env, c.args)
					var ee *exec.ExitError
					if err != nil && !errors.As(err, &ee) {
						t.Fatalf("%s:%d: gpuform %s: %v", f, c.line, strings.Join(c.args, " "), err)
					}
					if strings.Contains(out, "panic:") || strings.Contains(out, "goroutine ") {
						t.Errorf("%s:%d: gpuform %s crashed:\n%s", f, c.line, strings.Join(c.args, " "), out)
					}
					if missing, ok := matchOutput(c.want, out); !ok {
						t.Errorf("%s:%d: gpuform %s no longer prints (in this order)\n\t%s\nIt printed:\n%s", f, c.line, strings.Join(c.args, " "), missing, out)
					}
				}
			}
		})
	}
}

// copyTree copies the regular files under src to dst with their modes
// (the examples are a few dozen small files).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
}

// runTranscript runs the binary as a user's shell would, stdout and
// stderr into one stream as a terminal shows them.
func runTranscript(bin, dir string, env, args []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

// TestTranscriptParser: the parser and matcher that TestDocsTranscripts
// relies on, on a page written for it: a checked block, a skipped one, the
// comment and quotes of a command line, and a matcher that fails on a line
// the output lacks or prints out of order.
func TestTranscriptParser(t *testing.T) {
	t.Parallel()
	page := "Intro\n\n```console\n$ gpuform plan -var 'x=a b' examples/quickstart   # the plan\nPlan: … to add\n\n…\nDone.\n$ gpuform version\ngpuform v…\n```\n\n<!-- transcript: skip needs a real host -->\n```console\n$ gpuform verify\n```\n\n```sh\n$ ls\n```\n"
	ts, err := parseTranscripts("page.md", []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].skip != "" || ts[1].skip != "needs a real host" || len(ts[0].cmds) != 2 {
		t.Fatalf("parsed %+v", ts)
	}
	c := ts[0].cmds[0]
	if got := strings.Join(c.args, "|"); got != "plan|-var|x=a b|examples/quickstart" {
		t.Errorf("args %q", got)
	}
	if got := strings.Join(c.want, "|"); got != "Plan: … to add|…|Done." {
		t.Errorf("want %q", got)
	}
	for _, tc := range []struct {
		out string
		ok  bool
	}{
		{"probing\nPlan: 6 to add\nmore\nDone.\n", true},
		{"Plan: 6 to add\n", false},           // Done. missing
		{"Done.\nPlan: 6 to add\n", false},    // out of order
		{"Plan: 6 to change\nDone.\n", false}, // a different line
	} {
		if _, ok := matchOutput(c.want, tc.out); ok != tc.ok {
			t.Errorf("matchOutput(%q) = %v, want %v", tc.out, ok, tc.ok)
		}
	}
	for _, bad := range []string{"```console\nls -l\n```\n", "```console\n$ ls\n```\n", "```console\n$ gpuform plan | less\n```\n"} {
		if _, err := parseTranscripts("bad.md", []byte(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}
