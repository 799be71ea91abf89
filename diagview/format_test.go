package diagview_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/gpuform/gpuform/diagview"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/lint"
	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixture lints testdata/spec.gpuform.hcl and adds an HCL error, so every
// writer sees errors, warnings, infos and a plain diagnostic.
func fixture(t *testing.T) (hcl.Diagnostics, []lint.Finding, map[string]*hcl.File) {
	t.Helper()
	src, err := os.ReadFile("testdata/spec.gpuform.hcl")
	if err != nil {
		t.Fatal(err)
	}
	cfg, diags := spec.LoadFiles(map[string][]byte{"spec.gpuform.hcl": src}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatalf("fixture does not load: %s", diags.Error())
	}
	kbase, err := kb.Load()
	if err != nil {
		t.Fatal(err)
	}
	res, diags := lint.Run(cfg, lint.Options{KB: kbase, Now: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var sev = map[lint.Severity]bool{}
	for _, f := range res.Findings {
		sev[f.Severity] = true
	}
	if !sev[lint.Error] || !sev[lint.Warning] {
		t.Fatalf("fixture should produce errors and warnings, got %v", res.Findings)
	}
	hclDiag := &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Unsupported argument",
		Detail:   `An argument named "colour" is not expected here.`,
		Subject:  &hcl.Range{Filename: "spec.gpuform.hcl", Start: hcl.Pos{Line: 10, Column: 5, Byte: 0}, End: hcl.Pos{Line: 10, Column: 12, Byte: 0}},
	}
	// Byte offsets must match the file for snippets; compute them.
	off := 0
	for i, l := range strings.SplitAfter(string(src), "\n") {
		if i == 9 {
			hclDiag.Subject.Start.Byte = off + 4
			hclDiag.Subject.End.Byte = off + 11
			break
		}
		off += len(l)
	}
	return hcl.Diagnostics{hclDiag}, res.Findings, cfg.Files
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", name, d)
	}
}

func TestWriters(t *testing.T) {
	diags, findings, files := fixture(t)
	tests := map[string]func(*bytes.Buffer) error{
		"text.golden": func(b *bytes.Buffer) error {
			return diagview.WriteText(b, diags, findings, files, diagview.TextOptions{})
		},
		"text-color.golden": func(b *bytes.Buffer) error {
			return diagview.WriteText(b, diags, findings, files, diagview.TextOptions{Color: true})
		},
		"compact.golden": func(b *bytes.Buffer) error { return diagview.WriteCompact(b, diags, findings) },
		"json.golden":    func(b *bytes.Buffer) error { return diagview.WriteJSON(b, diags, findings, files) },
		"sarif.golden": func(b *bytes.Buffer) error {
			return diagview.WriteSARIF(b, diags, findings, diagview.SARIFOptions{ToolVersion: "0.1.0", Rules: lint.Catalogue()})
		},
	}
	for name, write := range tests {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := write(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, name, b.Bytes())
		})
	}
}

func TestJSONCounts(t *testing.T) {
	diags, findings, files := fixture(t)
	doc := diagview.NewJSONDocument(diags, findings, files)
	wantErr, wantWarn := 1, 0
	for _, f := range findings {
		switch f.Severity {
		case lint.Error:
			wantErr++
		case lint.Warning:
			wantWarn++
		}
	}
	if doc.Valid || doc.ErrorCount != wantErr || doc.WarningCount != wantWarn {
		t.Errorf("valid=%v errors=%d warnings=%d, want false %d %d", doc.Valid, doc.ErrorCount, doc.WarningCount, wantErr, wantWarn)
	}
	if doc.Diagnostics[0].Rule != "" || doc.Diagnostics[0].Snippet == nil {
		t.Errorf("HCL diagnostic: want no rule and a snippet, got %+v", doc.Diagnostics[0])
	}
	for _, d := range doc.Diagnostics[1:] {
		if d.Rule == "" || d.Range == nil {
			t.Errorf("finding without rule or range: %+v", d)
		}
	}
	// validate -json: diagnostics only, no errors → valid.
	clean := diagview.NewJSONDocument(hcl.Diagnostics{{Severity: hcl.DiagWarning, Summary: "w"}}, nil, nil)
	if !clean.Valid || clean.WarningCount != 1 || clean.Diagnostics[0].Range != nil {
		t.Errorf("warnings only: %+v", clean)
	}
}

// TestSARIFSchema validates the SARIF output against the official OASIS
// SARIF 2.1.0 JSON schema (testdata/sarif-schema-2.1.0.json), and checks
// that the validator really rejects a broken log, so the test cannot pass
// vacuously.
func TestSARIFSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	sch, err := c.Compile("testdata/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	diags, findings, _ := fixture(t)
	var b bytes.Buffer
	if err := diagview.WriteSARIF(&b, diags, findings, diagview.SARIFOptions{BaseDir: ".", Rules: lint.Catalogue()}); err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("SARIF output does not validate: %v", err)
	}

	var log map[string]any
	if err := json.Unmarshal(b.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	run := log["runs"].([]any)[0].(map[string]any)
	results := run["results"].([]any)
	// One result per finding, in order, at the finding's file (relative to
	// the base dir) and line, with SARIF's name for its severity.
	type resultView struct {
		RuleID, Level, Text, URI string
		StartLine                float64
	}
	level := map[lint.Severity]string{lint.Error: "error", lint.Warning: "warning", lint.Info: "note"}
	var want []resultView
	for _, f := range findings {
		text := f.Summary
		if f.Detail != "" {
			text += "\n\n" + f.Detail
		}
		want = append(want, resultView{f.Rule, level[f.Severity], text, "spec.gpuform.hcl", float64(f.Range.Start.Line)})
	}
	var got []resultView
	for _, r := range results {
		r := r.(map[string]any)
		v := resultView{RuleID: r["ruleId"].(string), Level: r["level"].(string), Text: r["message"].(map[string]any)["text"].(string)}
		if locs, ok := r["locations"].([]any); ok && len(locs) == 1 {
			pl := locs[0].(map[string]any)["physicalLocation"].(map[string]any)
			v.URI, _ = pl["artifactLocation"].(map[string]any)["uri"].(string)
			if reg, ok := pl["region"].(map[string]any); ok {
				v.StartLine, _ = reg["startLine"].(float64)
			}
		}
		got = append(got, v)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SARIF results (-want +got):\n%s", diff)
	}
	// The HCL error is no rule result: it is the invocation's
	// notification, at the fixture's line 10 columns 5 to 12, and the
	// invocation did not succeed.
	wantInv := []any{map[string]any{
		"executionSuccessful": false,
		"toolExecutionNotifications": []any{map[string]any{
			"level":   "error",
			"message": map[string]any{"text": "Unsupported argument\n\nAn argument named \"colour\" is not expected here."},
			"locations": []any{map[string]any{"physicalLocation": map[string]any{
				"artifactLocation": map[string]any{"uri": "spec.gpuform.hcl", "uriBaseId": "SRCROOT"},
				"region":           map[string]any{"startLine": float64(10), "startColumn": float64(5), "endLine": float64(10), "endColumn": float64(12)},
			}}},
		}},
	}}
	if diff := cmp.Diff(wantInv, run["invocations"]); diff != "" {
		t.Errorf("SARIF invocations (-want +got):\n%s", diff)
	}

	// A level SARIF does not know must be rejected by the same schema.
	results[0].(map[string]any)["level"] = "fatal"
	bad, _ := json.Marshal(log)
	inst, _ = jsonschema.UnmarshalJSON(bytes.NewReader(bad))
	if err := sch.Validate(inst); err == nil {
		t.Fatal("schema accepted an invalid level; the validation above proves nothing")
	}
}

func TestParseFormatAndWrite(t *testing.T) {
	diags, findings, files := fixture(t)
	for _, name := range []string{"text", "compact", "json", "sarif", "default", "JSON"} {
		f, err := diagview.ParseFormat(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var direct, viaWrite bytes.Buffer
		switch f {
		case diagview.Text:
			_ = diagview.WriteText(&direct, diags, findings, files, diagview.TextOptions{})
		case diagview.Compact:
			_ = diagview.WriteCompact(&direct, diags, findings)
		case diagview.JSON:
			_ = diagview.WriteJSON(&direct, diags, findings, files)
		case diagview.SARIF:
			_ = diagview.WriteSARIF(&direct, diags, findings, diagview.SARIFOptions{})
		}
		if err := diagview.Write(&viaWrite, f, diagview.Input{Diags: diags, Findings: findings, Files: files}); err != nil {
			t.Fatal(err)
		}
		if direct.String() != viaWrite.String() || direct.Len() == 0 {
			t.Errorf("%s: Write differs from the format's own writer", name)
		}
	}
	if _, err := diagview.ParseFormat("checkstyle"); err == nil {
		t.Error("unknown format accepted")
	}
}

// BenchmarkTextRandomBytes renders the diagnostics of 1 MB of random bytes,
// tens of thousands of them on one file: with a line index built once per
// file this is linear in the file size (it took 477 s when every snippet
// rescanned the file from its start).
func BenchmarkTextRandomBytes(b *testing.B) {
	src := make([]byte, 1<<20)
	rand.New(rand.NewSource(17)).Read(src)
	f, diags := hclparse.NewParser().ParseHCL(src, "random.gpuform.hcl")
	if f == nil {
		f = &hcl.File{Bytes: src}
	}
	files := map[string]*hcl.File{"random.gpuform.hcl": f}
	b.ResetTimer()
	for b.Loop() {
		if err := diagview.WriteText(io.Discard, diags, nil, files, diagview.TextOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
