package lint

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/gpuform/gpuform/spec"
)

// engineSpec has one warning (persistence_mode, line 8) and one error
// (container_shm_size, line 11) so that suppression, configuration and
// thresholds can be observed.
const engineSpec = `module "hgx" { source = "gpuform/hgx-h100-8gpu" }

node "n" {
  hosts    = ["h1"]
  hardware = { name = "box", gpu_model = "L40S", gpu_count = 1, interconnect = "pcie", cpu_sockets = 1, memory = "256GiB" }
  driver {
    version          = "580.159.03"
    persistence_mode = false%s
  }
  container {%s
    default_shm_size = "64MiB"%s
    ulimits          = { memlock = "unlimited" }
  }
}
%s`

func lintSource(t *testing.T, src string, opts Options) Result {
	t.Helper()
	if opts.Now.IsZero() {
		opts.Now = testNow
	}
	if opts.KB == nil {
		opts.KB = testKB
	}
	cfg := loadSpec(t, map[string]string{"main.gpuform.hcl": src})
	res, diags := Run(cfg, opts)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return res
}

// ruleLines summarises findings as "line rule severity".
func ruleLines(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, strings.Join([]string{itoaTest(f.Range.Start.Line), f.Rule, f.Severity.String()}, " "))
	}
	return out
}

func itoaTest(n int) string { return fmt.Sprintf("%02d", n) }

func TestSuppressionAndConfig(t *testing.T) {
	tests := map[string]struct {
		persist, above, shm, extra string
		opts                       Options
		want                       []string
		suppressed                 int
	}{
		"no suppression": {
			want: []string{"08 persistence_mode warning", "11 container_shm_size error"},
		},
		"same-line hash comment with reason": {
			persist:    " # gpuform-ignore: persistence_mode -- nvidia-persistenced runs from our image",
			want:       []string{"11 container_shm_size error"},
			suppressed: 1,
		},
		"slash comment naming two rules": {
			// The comment on line 8 covers lines 8 and 9 only: it silences
			// persistence_mode there, while container_shm_size on line 11
			// is out of its reach.
			persist:    " // gpuform-ignore: container_shm_size, persistence_mode",
			want:       []string{"11 container_shm_size error"},
			suppressed: 1,
		},
		"comment on the line above": {
			// A comment at the end of line 10 covers line 11 below it.
			above:      " # gpuform-ignore: container_shm_size -- jobs run with --ipc=host",
			want:       []string{"08 persistence_mode warning"},
			suppressed: 1,
		},
		"all": {
			shm:        " # gpuform-ignore: all -- jobs use --ipc=host",
			want:       []string{"08 persistence_mode warning"},
			suppressed: 1,
		},
		"unknown rule in a suppression is a finding": {
			shm:  " # gpuform-ignore: container_shm_sizes",
			want: []string{"08 persistence_mode warning", "11 container_shm_size error", "11 lint_unknown_rule warning"},
		},
		"lint block disables and re-grades": {
			extra: `
lint {
  rule "persistence_mode" { enabled = false }
  rule "container_shm_size" { severity = "warning" }
}
`,
			want: []string{"11 container_shm_size warning"},
		},
		"lint block names an unknown rule": {
			extra: `
lint {
  rule "persistance_mode" { enabled = false }
}
`,
			want: []string{"08 persistence_mode warning", "11 container_shm_size error", "17 lint_unknown_rule warning"},
		},
		"lint file wins over the lint block": {
			extra: `
lint {
  rule "persistence_mode" { enabled = false }
}
`,
			opts: Options{Config: &spec.LintConfig{Rules: []*spec.LintRuleConfig{
				{Name: "persistence_mode", Enabled: spec.Attr[bool]{V: true, Set: true}, Severity: spec.Attr[string]{V: "error", Set: true}},
			}}},
			want: []string{"08 persistence_mode error", "11 container_shm_size error"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			src := fmt.Sprintf(engineSpec, tc.persist, tc.above, tc.shm, tc.extra)
			res := lintSource(t, src, tc.opts)
			var mine []Finding
			for _, f := range res.Findings {
				switch f.Rule {
				case "persistence_mode", "container_shm_size", ruleUnknownRule:
					mine = append(mine, f)
				}
			}
			if d := cmp.Diff(tc.want, ruleLines(mine)); d != "" {
				t.Errorf("findings (-want +got):\n%s", d)
			}
			if len(res.Suppressed) != tc.suppressed {
				t.Errorf("suppressed %d, want %d", len(res.Suppressed), tc.suppressed)
			}
		})
	}
}

func TestUnknownRuleDidYouMean(t *testing.T) {
	res := lintSource(t, fmt.Sprintf(engineSpec, "", "", " # gpuform-ignore: container_shm_sise", ""), Options{})
	for _, f := range res.Findings {
		if f.Rule == ruleUnknownRule {
			if !strings.Contains(f.Detail, `Did you mean "container_shm_size"?`) {
				t.Errorf("detail %q lacks the suggestion", f.Detail)
			}
			// The range is the misspelt name inside the comment.
			if f.Range.Start.Line != 11 || f.Range.End.Column-f.Range.Start.Column != len("container_shm_sise") {
				t.Errorf("range %v does not cover the name", f.Range)
			}
			return
		}
	}
	t.Fatal("no lint_unknown_rule finding")
}

func TestInvalidSeverityIsDiagnostic(t *testing.T) {
	cfg := loadSpec(t, map[string]string{"main.gpuform.hcl": fmt.Sprintf(engineSpec, "", "", "", "")})
	_, diags := Run(cfg, Options{KB: testKB, Now: testNow, Config: &spec.LintConfig{Rules: []*spec.LintRuleConfig{
		{Name: "persistence_mode", Severity: spec.Attr[string]{V: "fatal", Set: true, Range: hcl.Range{Filename: ".gpuform-lint.hcl"}}},
	}}})
	if !diags.HasErrors() {
		t.Fatal("an invalid severity must be an error diagnostic")
	}
}

func TestMinSeverityAndExitCode(t *testing.T) {
	src := fmt.Sprintf(engineSpec, "", "", " # gpuform-ignore: container_shm_size", "")
	tests := map[string]struct {
		min      Severity
		diags    hcl.Diagnostics
		wantFail bool
		wantExit int
	}{
		"default threshold is error; only a warning left": {wantExit: 0},
		"warning threshold": {min: Warning, wantFail: true, wantExit: 2},
		"HCL errors win":    {min: Warning, wantFail: true, diags: hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "x"}}, wantExit: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := lintSource(t, src, Options{MinSeverity: tc.min})
			if res.Failed() != tc.wantFail {
				t.Errorf("Failed() = %v, want %v", res.Failed(), tc.wantFail)
			}
			if got := ExitCode(res, tc.diags); got != tc.wantExit {
				t.Errorf("ExitCode = %d, want %d", got, tc.wantExit)
			}
			if !res.HasAtOrAbove(Warning) || res.HasAtOrAbove(Error) {
				t.Errorf("HasAtOrAbove: findings %v", ruleLines(res.Findings))
			}
		})
	}
}

// TestPinsSilenceFloatingVersions: a branch-only driver is a warning unless
// the lock file pins it; a lock file that pins Fabric Manager to another
// release than the driver is an error.
func TestPins(t *testing.T) {
	src := strings.Replace(fmt.Sprintf(engineSpec, "\n    fabric_manager = true", "", "", ""), `"580.159.03"`, `"580"`, 1)
	count := func(res Result, rule string) int {
		n := 0
		for _, f := range res.Findings {
			if f.Rule == rule {
				n++
			}
		}
		return n
	}
	// The two rules a lock file answers, by their findings' count.
	pinRules := func(res Result) map[string]int {
		return map[string]int{"version_not_pinned": count(res, "version_not_pinned"), "fabric_manager_version": count(res, "fabric_manager_version")}
	}
	res := lintSource(t, src, Options{})
	if diff := cmp.Diff(map[string]int{"version_not_pinned": 1, "fabric_manager_version": 1}, pinRules(res)); diff != "" {
		t.Fatalf("unpinned (-want +got):\n%s\n%v", diff, ruleLines(res.Findings))
	}
	res = lintSource(t, src, Options{Pins: Pins{{Node: "n", Component: "driver"}: "580.95.05", {Node: "n", Component: "fabric_manager"}: "580.95.05"}})
	if diff := cmp.Diff(map[string]int{"version_not_pinned": 0, "fabric_manager_version": 0}, pinRules(res)); diff != "" {
		t.Fatalf("pinned (-want +got):\n%s\n%v", diff, ruleLines(res.Findings))
	}
	// A floating driver is judged on the release the lock file pins: 580.95.05
	// is affected by NVIDIA's bulletins 5747 and 5821.
	if count(res, "driver_security_advisory") == 0 {
		t.Fatalf("locked to 580.95.05, no driver_security_advisory: %v", ruleLines(res.Findings))
	}
	res = lintSource(t, src, Options{Pins: Pins{{Node: "n", Component: "driver"}: "580.95.05", {Node: "n", Component: "fabric_manager"}: "580.82.07"}})
	if count(res, "fabric_manager_version") != 1 || !res.HasAtOrAbove(Error) {
		t.Fatalf("mismatched pins: %v", ruleLines(res.Findings))
	}
	// From R620 whether Fabric Manager follows the driver's version is
	// unknown (facts.tsv fm-version-match-r620, unconfirmed): a mismatch is
	// a warning that says so, never an error.
	src620 := strings.Replace(src, `"580"`, `"620"`, 1)
	res = lintSource(t, src620, Options{Pins: Pins{{Node: "n", Component: "driver"}: "620.10.01", {Node: "n", Component: "fabric_manager"}: "1.0.0"}})
	var fm []Finding
	for _, f := range res.Findings {
		if f.Rule == "fabric_manager_version" {
			fm = append(fm, f)
		}
	}
	// One warning, on line 9 of src: fabric_manager = true, added after
	// the driver block's persistence_mode line; its detail says why it
	// is no error.
	if diff := cmp.Diff([]string{"09 fabric_manager_version warning"}, ruleLines(fm)); diff != "" {
		t.Fatalf("R620 mismatched pins (-want +got):\n%s", diff)
	}
	if !strings.Contains(fm[0].Detail, "From R620") {
		t.Errorf("R620 warning's detail: %q", fm[0].Detail)
	}
}

// TestPartialConfigs runs every rule over configs with nil and empty parts,
// as the loader returns them next to errors: no rule may panic.
func TestPartialConfigs(t *testing.T) {
	configs := map[string]*spec.Config{
		"empty":         {},
		"nil node":      {Nodes: []*spec.Node{nil}},
		"bare node":     {Nodes: []*spec.Node{{Name: "n"}}},
		"empty blocks":  {Nodes: []*spec.Node{{Name: "n", Driver: &spec.Driver{}, CUDA: &spec.VersionedBlock{}, NCCL: &spec.VersionedBlock{}, DCGM: &spec.VersionedBlock{}, Container: &spec.Container{}, Shm: &spec.Shm{}, NUMA: &spec.NUMA{Binds: []*spec.NUMABind{nil, {}}}, Affinity: &spec.Affinity{GPUNIC: map[int]spec.Attr[string]{0: {}}}, Hugepages: &spec.Hugepages{}, Verify: &spec.Verify{NVML: &spec.VerifyNVML{}, NCCLTests: []*spec.NCCLTest{nil, {}}}, Rollout: &spec.Rollout{}, Hardware: &spec.Hardware{}}}},
		"nil inventory": {Inventories: map[string]*spec.Inventory{"a": nil}, Modules: map[string]*spec.ModuleCall{"m": nil}},
		"set but zero":  {Nodes: []*spec.Node{{Name: "n", Driver: &spec.Driver{Version: spec.Attr[spec.Version]{Set: true}, FabricManager: spec.Attr[bool]{V: true, Set: true}}, CUDA: &spec.VersionedBlock{Version: spec.Attr[spec.Version]{Set: true}}, Hugepages: &spec.Hugepages{Size: spec.Attr[spec.Size]{Set: true}, Count: spec.Attr[int]{V: 1 << 40, Set: true}}, Hardware: &spec.Hardware{Memory: spec.Size{Bytes: 1}, Interconnect: "nvswitch"}}}},
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			_, diags := Run(cfg, Options{KB: testKB, Now: testNow})
			for _, d := range diags {
				if strings.HasPrefix(d.Summary, "Internal error") {
					t.Errorf("%s: %s", d.Summary, d.Detail)
				}
			}
		})
	}
	if res, diags := Run(nil, Options{}); len(res.Findings) != 0 || diags.HasErrors() {
		t.Error("nil config")
	}
}

// TestRunWithoutKB: a caller that forgot the knowledge base gets an error
// diagnostic, not a panic and not a silently empty run.
func TestRunWithoutKB(t *testing.T) {
	cfg := loadSpec(t, map[string]string{"main.gpuform.hcl": fmt.Sprintf(engineSpec, "", "", "", "")})
	res, diags := Run(cfg, Options{Now: testNow})
	if !diags.HasErrors() || len(res.Findings) != 0 {
		t.Fatalf("Run without a KB: findings %v, diags %v; want one error and no findings", res.Findings, diags)
	}
	if got := diags[0].Summary; got != "No knowledge base" {
		t.Errorf("summary %q, want %q", got, "No knowledge base")
	}
}

func TestSortAndDedup(t *testing.T) {
	r := func(file string, line, col int) hcl.Range {
		return hcl.Range{Filename: file, Start: hcl.Pos{Line: line, Column: col}, End: hcl.Pos{Line: line, Column: col + 1}}
	}
	in := []Finding{
		{Rule: "b", Severity: Warning, Summary: "s", Range: r("b.hcl", 1, 1)},
		{Rule: "b", Severity: Error, Summary: "s", Range: r("a.hcl", 2, 1)},
		{Rule: "a", Severity: Error, Summary: "s", Range: r("a.hcl", 2, 1)},
		{Rule: "b", Severity: Warning, Summary: "s", Range: r("a.hcl", 2, 1)},
		{Rule: "c", Severity: Info, Summary: "s", Range: r("a.hcl", 1, 9)},
	}
	got := ruleLines(sortFindings(in))
	want := []string{"01 c info", "02 a error", "02 b error", "01 b warning"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestAdvisoriesParse checks every row of lint's own advisory table.
func TestAdvisoriesParse(t *testing.T) {
	advs, err := parseAdvisories()
	if err != nil {
		t.Fatal(err)
	}
	if len(advs) == 0 {
		t.Fatal("no advisories")
	}
	for _, a := range advs {
		if !strings.HasPrefix(a.id, "CVE-") || a.fact.Source() == "" || !a.fact.Status.CanBeError() {
			t.Errorf("advisory %+v: want a CVE id, a source and a confirmed status", a)
		}
		if _, ok := testKB.ContainerToolkit(a.fixed); !ok {
			t.Errorf("%s: fixed release %s is not a container toolkit release in kb", a.id, a.fixed)
		}
	}
}

// TestCommentTokensFastPath: the per-line lexing used for plain files finds
// the same suppression comments, at the same positions, as lexing the
// whole file.
func TestCommentTokensFastPath(t *testing.T) {
	src := []byte("a = \"# gpuform-ignore: x\" # gpuform-ignore: y\n\n  b = 1 // gpuform-ignore: z -- why\nc = [\n  1, # gpuform-ignore: all\n]\n")
	fast := commentTokens(src, "f.hcl")
	full, _ := hclsyntax.LexConfig(src, "f.hcl", hcl.InitialPos)
	var want []string
	for _, tok := range full {
		if tok.Type == hclsyntax.TokenComment && strings.Contains(string(tok.Bytes), "gpuform-ignore") {
			want = append(want, fmt.Sprintf("%v %q", tok.Range, tok.Bytes))
		}
	}
	var got []string
	for _, tok := range fast {
		got = append(got, fmt.Sprintf("%v %q", tok.Range, tok.Bytes))
	}
	if len(want) != 3 {
		t.Fatalf("full lex found %d comments: %v", len(want), want)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-full +fast):\n%s", d)
	}
}

// FuzzCommentTokens feeds arbitrary text to the suppression scanner: it
// must not panic, and every annotation it parses must point into the text.
func FuzzCommentTokens(f *testing.F) {
	for _, seed := range []string{
		"# gpuform-ignore: a, b -- why\nx = 1\n",
		"x = 1 // gpuform-ignore: all\n",
		"x = <<EOT\n# gpuform-ignore: a\nEOT\n",
		"/* gpuform-ignore: a */ x = 1",
		"# gpuform-ignore:",
		"# gpuform-ignore: ,,, -- # ",
	} {
		f.Add(seed)
	}
	known := map[string]bool{"a": true, "all": true}
	f.Fuzz(func(t *testing.T, src string) {
		for _, tok := range commentTokens([]byte(src), "f.hcl") {
			if tok.Range.Start.Byte < 0 || tok.Range.End.Byte > len(src) {
				t.Fatalf("token %v outside the source", tok.Range)
			}
			_, fs := parseAnnotation(tok, known, []string{"a"})
			for _, f := range fs {
				if f.Range.End.Byte > len(src) || f.Range.Start.Byte > f.Range.End.Byte {
					t.Fatalf("finding range %v outside the source", f.Range)
				}
			}
		}
	})
}
