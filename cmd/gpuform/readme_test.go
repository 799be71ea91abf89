package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// readDoc reads a file of the repository's documentation (a path from the
// repository root).
func readDoc(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// userDocText is README.md and every page under docs/, where a user looks
// for what a command or flag does.
func userDocText(t *testing.T) string {
	t.Helper()
	var all strings.Builder
	all.WriteString(readDoc(t, "README.md"))
	err := filepath.WalkDir("../../docs", func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(path, ".md") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			all.Write(b)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return all.String()
}

// section returns the text of the README section headed by heading, up to
// the next heading of the same level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	start := strings.Index(doc, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("no section %q", heading)
	}
	rest := doc[start+len(heading)+2:]
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// helpCommands lists the commands `gpuform -h` offers, help itself aside.
func helpCommands(t *testing.T) []string {
	t.Helper()
	code, out, errOut := runCLI(t, "", "-h")
	if code != ExitOK {
		t.Fatalf("gpuform -h: exit %d\n%s", code, errOut)
	}
	_, list, ok := strings.Cut(out, "\nAvailable Commands:\n")
	if !ok {
		t.Fatalf("gpuform -h lists no commands:\n%s", out)
	}
	list, _, _ = strings.Cut(list, "\n\n")
	var cmds []string
	for _, l := range strings.Split(list, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "help" {
			cmds = append(cmds, f[0])
		}
	}
	if len(cmds) < 10 {
		t.Fatalf("found %d commands in gpuform -h:\n%s", len(cmds), out)
	}
	return cmds
}

// TestReadmeQuickstart runs the README's five-minute quickstart as written,
// one command after another against the same simulated node, and checks
// what its text promises: each step exits 0, the second plan has nothing
// left to do, verify passes, and the shipped lock file passes lock -check.
func TestReadmeQuickstart(t *testing.T) {
	t.Parallel()
	qs := section(t, readDoc(t, "README.md"), "## Five-minute quickstart")
	_, block, ok := strings.Cut(qs, "\n```sh\n")
	if !ok {
		t.Fatal("the quickstart shows no ```sh block")
	}
	block, _, _ = strings.Cut(block, "\n```")
	lines := strings.Split(block, "\n")
	if lines[0] != "go build -o gpuform ./cmd/gpuform" {
		t.Fatalf("the quickstart's first line is %q, not the build the steps below run", lines[0])
	}
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	var ran []string
	run := func(line string, args []string) string {
		code, out, errOut := runCLIEnv(t, env, args...)
		if code != ExitOK {
			t.Fatalf("README quickstart %q: exit %d\n%s%s", line, code, out, errOut)
		}
		ran = append(ran, args[0])
		return out + errOut
	}
	plans := 0
	for _, line := range lines[1:] {
		cmdline, _, _ := strings.Cut(line, " #")
		if strings.ContainsAny(cmdline, `'"$|;&<>`+"`") {
			t.Fatalf("quickstart line %q needs a shell; keep each step one plain command", line)
		}
		f := strings.Fields(cmdline)
		if len(f) < 2 || f[0] != "./gpuform" {
			t.Fatalf("quickstart line %q does not run ./gpuform", line)
		}
		args := f[1:]
		for i, a := range args {
			if strings.HasPrefix(a, "examples/") {
				args[i] = "../../" + a
			}
		}
		out := run(line, args)
		switch args[0] {
		case "plan":
			if plans++; plans == 2 && !strings.Contains(out, "No changes. Every host matches the spec") {
				t.Errorf("the second plan (%q) has changes left:\n%s", line, out)
			}
		case "verify":
			if !strings.Contains(out, "Verify passed") {
				t.Errorf("verify (%q) did not pass:\n%s", line, out)
			}
		}
	}
	for _, want := range []string{"validate", "lint", "plan", "apply", "verify"} {
		if !strings.Contains(" "+strings.Join(ran, " ")+" ", " "+want+" ") {
			t.Errorf("the quickstart no longer runs %s (ran %v)", want, ran)
		}
	}
	if plans != 2 {
		t.Errorf("the quickstart plans %d times; its text says a plan after apply has nothing left to do", plans)
	}
	if !strings.Contains(qs, "`gpuform lock -check\nexamples/quickstart` passes") {
		t.Fatal("the quickstart no longer says lock -check passes; keep this test in step")
	}
	run("lock -check examples/quickstart", []string{"lock", "-check", "../../examples/quickstart"})
}

// TestReadmeCommandTable: the README's command table has one row for every
// command gpuform offers, and no row for a command it does not.
func TestReadmeCommandTable(t *testing.T) {
	t.Parallel()
	table := section(t, readDoc(t, "README.md"), "## Commands")
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `gpuform ([a-z]+)").FindAllStringSubmatch(table, -1) {
		rows = append(rows, m[1])
	}
	cmds := helpCommands(t)
	sort.Strings(rows)
	sort.Strings(cmds)
	if strings.Join(rows, " ") != strings.Join(cmds, " ") {
		t.Errorf("README command table rows:\n  %v\ngpuform -h commands:\n  %v", rows, cmds)
	}
}

// TestEveryFlagDocumented: every flag of every command is named (as -flag)
// in README.md or a page under docs/, so a new flag comes with its words.
func TestEveryFlagDocumented(t *testing.T) {
	t.Parallel()
	docs := userDocText(t)
	flag := regexp.MustCompile(`(?m)^\s+(?:-[a-zA-Z], )?--([a-z][a-z0-9-]*)`)
	for _, c := range helpCommands(t) {
		code, out, errOut := runCLI(t, "", c, "-h")
		if code != ExitOK {
			t.Fatalf("gpuform %s -h: exit %d\n%s", c, code, errOut)
		}
		flags := flag.FindAllStringSubmatch(out, -1)
		if len(flags) == 0 {
			t.Fatalf("gpuform %s -h shows no flags:\n%s", c, out)
		}
		for _, m := range flags {
			name := m[1]
			if name == "help" {
				continue
			}
			if !regexp.MustCompile(`-` + regexp.QuoteMeta(name) + `\b`).MatchString(docs) {
				t.Errorf("gpuform %s -%s is documented nowhere in README.md or docs/", c, name)
			}
		}
	}
}

// TestContractsExitCodes: the contracts page's exit-code table has a row
// for each exit code the CLI returns.
func TestContractsExitCodes(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "docs/guide/contracts.md")
	for code, meaning := range map[int]string{ExitOK: "clean", ExitFailed: "could not do its job", ExitReport: "has something to report"} {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^\| %d \| [^\n]*%s`, code, regexp.QuoteMeta(meaning))).MatchString(doc) {
			t.Errorf("docs/guide/contracts.md has no row for exit %d (%s)", code, meaning)
		}
	}
}
