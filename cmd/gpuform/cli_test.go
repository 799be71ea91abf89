package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runCLI runs the CLI in-process with injected streams. Simulated nodes
// keep their state in a temporary directory, so that no test leaves state
// under examples/ however far a command gets.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, Streams{In: strings.NewReader(stdin), Out: &out, Err: &errb, Environ: []string{"NO_COLOR=1", "GPUFORM_SIM_STATE=" + t.TempDir()}})
	return code, out.String(), errb.String()
}

func exampleDirs(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob("../../examples/*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	if len(out) < 4 {
		t.Fatalf("want at least 4 examples, found %v", out)
	}
	return out
}

func TestValidateExamples(t *testing.T) {
	for _, dir := range exampleDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			code, out, errOut := runCLI(t, "", "validate", dir)
			if code != ExitOK || !strings.Contains(out, "Success!") {
				t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
		})
	}
}

func TestValidateUnknownAttribute(t *testing.T) {
	code, _, errOut := runCLI(t, "", "validate", "testdata/unknown-attr")
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"Error: Unsupported argument",
		"testdata/unknown-attr/main.gpuform.hcl line 5, column 5",
		"Did you mean\n\"kernel_module\"?",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("text output lacks %q:\n%s", want, errOut)
		}
	}

	code, out, _ := runCLI(t, "", "validate", "-json", "testdata/unknown-attr")
	if code != ExitFailed {
		t.Fatalf("-json exit %d, want 1", code)
	}
	var doc struct {
		FormatVersion string `json:"format_version"`
		Valid         bool   `json:"valid"`
		ErrorCount    int    `json:"error_count"`
		Diagnostics   []struct {
			Severity, Summary string
			Range             struct {
				Filename string
				Start    struct{ Line, Column, Byte int }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if doc.Valid || doc.ErrorCount != 1 || doc.FormatVersion == "" || len(doc.Diagnostics) != 1 {
		t.Fatalf("document: %+v", doc)
	}
	d := doc.Diagnostics[0]
	if d.Severity != "error" || d.Range.Filename != "testdata/unknown-attr/main.gpuform.hcl" || d.Range.Start.Line != 5 || d.Range.Start.Column != 5 {
		t.Errorf("diagnostic: %+v", d)
	}
}

// TestFmtIdempotentOnExamples formats each example's files and checks that
// they are already canonical, and that formatting the output changes nothing.
func TestFmtIdempotentOnExamples(t *testing.T) {
	for _, dir := range exampleDirs(t) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.hcl"))
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			once, diags := formatSource(src, f)
			if diags.HasErrors() {
				t.Fatalf("%s: %s", f, diags.Error())
			}
			twice, _ := formatSource(once, f)
			if !bytes.Equal(once, twice) {
				t.Errorf("%s: fmt is not idempotent", f)
			}
			if !bytes.Equal(src, once) {
				t.Errorf("%s is not in canonical format (run gpuform fmt)", f)
			}
		}
		if code, out, errOut := runCLI(t, "", "fmt", "-check", dir); code != ExitOK {
			t.Errorf("fmt -check %s: exit %d\n%s%s", dir, code, out, errOut)
		}
	}
}

func TestFmtRewritesAndChecks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.gpuform.hcl")
	ugly := "node \"a\" {\nhosts = [\"h\"]\n  cuda {\n version = \"12.8.1\"\n}\n}\n"
	if err := os.WriteFile(path, []byte(ugly), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI(t, "", "fmt", "-check", "-diff", dir); code != ExitReport || !strings.Contains(out, "+  hosts = [\"h\"]") {
		t.Fatalf("fmt -check -diff: exit %d\n%s", code, out)
	}
	if got, _ := os.ReadFile(path); string(got) != ugly {
		t.Fatal("-check wrote the file")
	}
	if code, _, _ := runCLI(t, "", "fmt", dir); code != ExitOK {
		t.Fatalf("fmt exit %d", code)
	}
	got, _ := os.ReadFile(path)
	want := "node \"a\" {\n  hosts = [\"h\"]\n  cuda {\n    version = \"12.8.1\"\n  }\n}\n"
	if string(got) != want {
		t.Errorf("formatted:\n%s", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("fmt changed the file mode to %v", fi.Mode().Perm())
	}
	// A syntax error is reported, exit 1, and the file is left alone.
	bad := "node \"a\" {\n"
	os.WriteFile(path, []byte(bad), 0o600)
	if code, _, errOut := runCLI(t, "", "fmt", dir); code != ExitFailed || !strings.Contains(errOut, "Unclosed configuration block") {
		t.Errorf("fmt of bad file: exit %d\n%s", code, errOut)
	}
	if got, _ := os.ReadFile(path); string(got) != bad {
		t.Error("fmt rewrote a file with a syntax error")
	}
	// Standard input.
	if code, out, _ := runCLI(t, ugly, "fmt", "-"); code != ExitOK || out != want {
		t.Errorf("fmt -: exit %d\n%s", code, out)
	}
}

func TestSingleDashFlags(t *testing.T) {
	got := normalizeArgs([]string{"plan", "-json", "-var", "a=-b", "-h", "--x", "--", "-json"})
	want := []string{"plan", "--json", "--var", "a=-b", "-h", "--x", "--", "-json"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v", got)
	}
	code, out, _ := runCLI(t, "", "version", "-json")
	var version map[string]string
	if err := json.Unmarshal([]byte(out), &version); code != ExitOK || err != nil {
		t.Errorf("version -json: %d %v %s", code, err, out)
	}
	wantKeys := []string{"format_version", "go_version", "gpuform_version", "knowledge_base_date", "knowledge_base_newest", "knowledge_base_refresh_date", "platform"}
	if diff := cmp.Diff(wantKeys, slices.Sorted(maps.Keys(version))); diff != "" {
		t.Errorf("version -json fields (-want +got):\n%s", diff)
	}
	if version["gpuform_version"] != Version || version["go_version"] != runtime.Version() || version["platform"] != runtime.GOOS+"_"+runtime.GOARCH {
		t.Errorf("version -json: %v, want gpuform %s, %s on %s_%s", version, Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	if code, _, errOut := runCLI(t, "", "validate", "-nosuchflag"); code != ExitFailed || !strings.Contains(errOut, "unknown flag") {
		t.Errorf("bad flag: %d %s", code, errOut)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFmtOddPaths runs fmt on paths that are not plain spec files: each
// must end with a clear error and exit 1, or do the right thing, and never
// hang, replace a link by a copy, or parse a file that is not a spec.
func TestFmtOddPaths(t *testing.T) {
	dir := t.TempDir()
	ugly := "node \"a\" {\nhosts = [\"h\"]\n}\n"
	want := "node \"a\" {\n  hosts = [\"h\"]\n}\n"
	real := filepath.Join(dir, "shared.gpuform.hcl")
	writeFile(t, real, ugly)
	// dir is a repository: a spec shared by a link stays inside it.
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	specDir := filepath.Join(dir, "spec")
	if err := os.Mkdir(specDir, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(specDir, "main.gpuform.hcl")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(dir, "README.md")
	writeFile(t, readme, "# `not` HCL\n")

	cases := []struct {
		name     string
		path     string
		wantCode int
		wantErr  string
	}{
		{"missing path", filepath.Join(dir, "nope"), ExitFailed, "no such file"},
		{"a file that is not a spec", readme, ExitFailed, "is not a gpuform file"},
		{"a device", os.DevNull, ExitFailed, "neither a regular file nor a directory"},
		{"a directory with a symlinked spec", specDir, ExitOK, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, "", "fmt", c.path)
			if code != c.wantCode || !strings.Contains(errOut, c.wantErr) {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, c.wantCode, errOut)
			}
			if strings.Contains(errOut, "goroutine") {
				t.Errorf("stack trace:\n%s", errOut)
			}
		})
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("fmt replaced the symlink %s by a file (%v)", link, err)
	}
	if got, _ := os.ReadFile(real); string(got) != want {
		t.Errorf("the link's target was not formatted:\n%s", got)
	}
	if got, _ := os.ReadFile(readme); string(got) != "# `not` HCL\n" {
		t.Errorf("fmt touched README.md")
	}
}

// TestMachineOutputOnFailure checks the JSON contract when a command fails
// before it has its own document to print: stdout still holds exactly one
// JSON document with format_version and the error, and the exit status is
// 1, so a pipeline that asked for JSON never finds stdout empty.
func TestMachineOutputOnFailure(t *testing.T) {
	bad := t.TempDir()
	writeFile(t, filepath.Join(bad, "main.gpuform.hcl"), "inventory \"i\" {\n  hosts = null\n}\n")
	quick := "../../examples/quickstart"
	cases := []struct {
		name string
		args []string
		want string // a substring of a diagnostic summary
	}{
		{"plan, invalid spec", []string{"plan", "-json", bad}, "Missing required argument"},
		{"plan, unknown target", []string{"plan", "-json", "-target", "nope", quick}, `no node in the spec has host "nope"`},
		{"plan, zero parallelism", []string{"plan", "-json", "-parallelism", "0", quick}, "-parallelism must be 1 or more"},
		{"facts, invalid spec", []string{"facts", "-json", bad}, "Missing required argument"},
		{"facts, missing ssh_config", []string{"facts", "-json", "-ssh-config", filepath.Join(bad, "nope"), quick}, "-ssh-config: stat"},
		{"facts, missing identity", []string{"facts", "-json", "-identity", filepath.Join(bad, "nope"), quick}, "-identity: stat"},
		{"facts, missing root", []string{"facts", "-json", "-root", filepath.Join(bad, "nope")}, "is not a directory"},
		{"verify, invalid spec", []string{"verify", "-format", "json", bad}, "Missing required argument"},
		{"verify, unknown tier", []string{"verify", "-format", "json", "-tier", "bogus", quick}, `unknown tier "bogus"`},
		{"verify, negative parallelism", []string{"verify", "-format", "json", "-parallelism", "-3", quick}, "-parallelism must be 1 or more"},
		{"apply, invalid spec", []string{"apply", "-json", "-auto-approve", bad}, "Missing required argument"},
		{"apply, no approval", []string{"apply", "-json", quick}, "-json cannot ask for confirmation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", c.args...)
			if code != ExitFailed {
				t.Errorf("exit %d, want 1\nstderr: %s", code, errOut)
			}
			var doc struct {
				FormatVersion string `json:"format_version"`
				Valid         bool   `json:"valid"`
				Diagnostics   []struct{ Severity, Summary string }
			}
			dec := json.NewDecoder(strings.NewReader(out))
			if err := dec.Decode(&doc); err != nil {
				t.Fatalf("stdout is not a JSON document: %v\nstdout: %q\nstderr: %s", err, out, errOut)
			}
			if dec.More() {
				t.Errorf("stdout holds more than one document:\n%s", out)
			}
			if doc.FormatVersion == "" || doc.Valid {
				t.Errorf("document: %+v", doc)
			}
			found := false
			for _, d := range doc.Diagnostics {
				found = found || (d.Severity == "error" && strings.Contains(d.Summary, c.want))
			}
			if !found {
				t.Errorf("no error diagnostic says %q:\n%s", c.want, out)
			}
		})
	}
}

// TestOutCheckedBeforeWork checks that plan -out and verify -out refuse a
// destination that cannot be written before they probe or verify any host:
// a fleet-wide run must not be thrown away at the end for a typo.
func TestOutCheckedBeforeWork(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir", "report")
	env := []string{"NO_COLOR=1", "GPUFORM_SIM_STATE=" + t.TempDir()}
	cases := []struct {
		name string
		args []string
	}{
		{"plan", []string{"plan", "-out", missing, "../../examples/quickstart"}},
		{"verify", []string{"verify", "-out", missing, "../../examples/quickstart"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(context.Background(), c.args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb, Environ: env})
			if code != ExitFailed {
				t.Errorf("exit %d, want 1", code)
			}
			if !strings.HasPrefix(errb.String(), "Error: -out") {
				t.Errorf("stderr does not start with the -out error (did it probe first?):\n%s", errb.String())
			}
			if out.Len() != 0 {
				t.Errorf("stdout:\n%s", out.String())
			}
		})
	}
}

// TestVerifyLocalOnlyFlags checks that verify refuses the flags that only
// mean something with --local when --local is absent, instead of running
// a lesser verification than the one asked for and passing it.
func TestVerifyLocalOnlyFlags(t *testing.T) {
	quick := "../../examples/quickstart"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"nccl without local", []string{"verify", "-nccl", quick}, "-nccl works only with --local"},
		{"node without local", []string{"verify", "-node", "quickstart", quick}, "-node works only with --local"},
		{"mock without local", []string{"verify", "-mock-nvml", "dgxh100", quick}, "-mock-nvml works only with --local"},
		{"unknown mock", []string{"verify", "-local", "-mock-nvml", "hgx-h100", quick}, `unknown simulated system "hgx-h100"`},
		{"slurm-drain without local", []string{"verify", "-slurm-drain", quick}, "-slurm-drain works only with --local"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, "", c.args...)
			if code != ExitFailed || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, want 1 with %q; stderr:\n%s", code, c.want, errOut)
			}
		})
	}
}

// TestHostInTwoNodes checks that plan and verify both refuse a host that
// two node blocks claim, instead of verifying it against one of them.
func TestHostInTwoNodes(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `node "a" {
  hosts = ["sim://hgx-h100-stale"]
  driver {
    version = "535.183.06"
  }
}
node "b" {
  hosts = ["sim://hgx-h100-stale"]
  driver {
    version = "580.95.05"
  }
}
`)
	// Every command that reaches hosts selects them on one path: facts
	// and lock used to pick one of the two blocks silently.
	for _, cmd := range []string{"validate", "plan", "apply", "verify", "facts", "lock"} {
		t.Run(cmd, func(t *testing.T) {
			code, _, errOut := runCLI(t, "", cmd, dir)
			if code != ExitFailed || !strings.Contains(errOut, `is in node "a" and node "b"`) || !strings.Contains(errOut, "main.gpuform.hcl line 8") {
				t.Errorf("exit %d, want 1 naming both nodes at the second listing (line 8); stderr:\n%s", code, errOut)
			}
		})
	}
}

// TestFmtDeepNesting checks that fmt refuses text nested deeply enough to
// overflow the parser's stack, instead of crashing.
func TestFmtDeepNesting(t *testing.T) {
	src := "locals {\n  a = " + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + "\n}\n"
	code, _, errOut := runCLI(t, src, "fmt", "-")
	if code != ExitFailed || !strings.Contains(errOut, "Nesting too deep") {
		t.Errorf("exit %d, want 1 with \"Nesting too deep\"; stderr:\n%.300s", code, errOut)
	}
}

// TestLongOperatorChain: a chain of a million binary operators (2 MB of
// "+1") parses into a tree a million levels deep, whose evaluation
// overflowed the Go stack in validate and lint, and which fmt took 7 s
// and 1.4 GB to rewrite. Every command refuses it as too deep.
func TestLongOperatorChain(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"+", "/", "%", "&&", "||", "==", "!=", "<", "<=", ">", ">="} {
		t.Run(op, func(t *testing.T) {
			// A million for one operator and every command; past the
			// limit of 10000 for the others.
			n, cmds := 20000, []string{"validate"}
			if op == "+" {
				n, cmds = 1000000, []string{"validate", "lint", "fmt"}
			}
			src := "locals {\n  a = 1" + strings.Repeat(op+"1", n) + "\n}\n"
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), src)
			for _, cmd := range cmds {
				args := []string{cmd, dir}
				if cmd == "fmt" {
					args = []string{cmd, "-check", dir}
				}
				code, out, errOut := runCLI(t, "", args...)
				if code != ExitFailed || !strings.Contains(out+errOut, "Nesting too deep") {
					t.Errorf("%s: exit %d, want 1 with \"Nesting too deep\"; output:\n%.300s%.300s", args[0], code, out, errOut)
				}
			}
		})
	}
}

// TestBadFlagValues checks that a flag value of the wrong kind is exit 1
// with a message in words, not the Go parser's.
func TestBadFlagValues(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"plan", "-parallelism", "1.5"}, `invalid argument "1.5" for "-parallelism" flag: a whole number is required`},
		{[]string{"plan", "-json=maybe"}, `invalid argument "maybe" for "-json" flag: true or false is required`},
		{[]string{"verify", "-parallelism", "99999999999999999999"}, "a whole number is required"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, errOut := runCLI(t, "", c.args...)
			if code != ExitFailed || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "strconv") {
				t.Errorf("exit %d, want 1 with %q; stderr:\n%s", code, c.want, errOut)
			}
		})
	}
}

// TestNoColorFlag checks that every command takes Terraform's -no-color.
// (That it turns colour off on a terminal needs a terminal; Run turns it
// into NO_COLOR, which Streams.Color reads.)
func TestNoColorFlag(t *testing.T) {
	quick := "../../examples/quickstart"
	for _, args := range [][]string{
		{"validate", "-no-color", quick},
		{"lint", "-no-color", quick},
		{"fmt", "-no-color", "-check", quick},
		{"version", "-no-color"},
		{"plan", "-no-color", "-target", "nope", quick},
	} {
		t.Run(args[0], func(t *testing.T) {
			_, _, errOut := runCLI(t, "", args...)
			if strings.Contains(errOut, "unknown flag") {
				t.Errorf("%v: %s", args, errOut)
			}
		})
	}
}

func TestHelpTopics(t *testing.T) {
	if code, out, _ := runCLI(t, "", "help", "plan"); code != ExitOK || !strings.Contains(out, "gpuform plan") {
		t.Errorf("help plan: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCLI(t, "", "help", "bogus"); code != ExitFailed || !strings.Contains(errOut, "unknown help topic") {
		t.Errorf("help bogus: exit %d %s", code, errOut)
	}
}
