package lint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// TestExamplesLintClean lints every spec under ../examples: the specs new
// users copy must load and carry no error finding. Warnings are allowed
// (and logged), since some rest on unconfirmed data by design.
func TestExamplesLintClean(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "examples", "*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		specs, _ := filepath.Glob(filepath.Join(dir, "*"+spec.SpecFileSuffix))
		if len(specs) == 0 {
			continue
		}
		n++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			cfg, diags := spec.Load(dir, spec.LoadOptions{BuiltinModules: modules.FS()})
			if diags.HasErrors() {
				t.Fatalf("example does not load:\n%s", diags.Error())
			}
			res, diags := Run(cfg, Options{KB: testKB, Now: testNow})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			var errs []string
			for _, f := range res.Findings {
				line := findingLines([]Finding{f})[0]
				if f.Severity == Error {
					errs = append(errs, line)
				} else {
					t.Log(line)
				}
			}
			if len(errs) > 0 {
				t.Errorf("example has error findings:\n%s", strings.Join(errs, "\n"))
			}
		})
	}
	if n == 0 {
		t.Fatal("no examples found under ../examples")
	}
}

// TestQuickstartDriverAdvisory: the quickstart lints clean only because its
// driver is a fixed release. With the driver it pinned before (580.95.05,
// which NVIDIA's bulletins 5747 and 5821 list as affected) the same spec
// carries a driver_security_advisory error.
func TestQuickstartDriverAdvisory(t *testing.T) {
	src := filepath.Join("..", "examples", "quickstart")
	run := func(driver string) []Finding {
		dir := t.TempDir()
		specs, _ := filepath.Glob(filepath.Join(src, "*"+spec.SpecFileSuffix))
		for _, p := range specs {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			s := string(b)
			if driver != "" {
				const ref = "version          = module.stack.driver_version"
				if !strings.Contains(s, ref) && filepath.Base(p) == "main"+spec.SpecFileSuffix {
					t.Fatalf("the quickstart no longer takes its driver from the stack module (%q)", ref)
				}
				s = strings.Replace(s, ref, `version          = "`+driver+`"`, 1)
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cfg, diags := spec.Load(dir, spec.LoadOptions{BuiltinModules: modules.FS()})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		res, diags := Run(cfg, Options{KB: testKB, Now: testNow})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		var out []Finding
		for _, f := range res.Findings {
			if f.Rule == "driver_security_advisory" {
				out = append(out, f)
			}
		}
		return out
	}
	if got := run(""); len(got) != 0 {
		t.Errorf("the quickstart as shipped has advisory findings:\n%s", strings.Join(findingLines(got), "\n"))
	}
	got := run("580.95.05")
	hasError := false
	for _, f := range got {
		hasError = hasError || (f.Severity == Error && strings.Contains(f.Summary, "CVE-2026-24187"))
	}
	if !hasError {
		t.Errorf("the quickstart on 580.95.05: want a driver_security_advisory error naming CVE-2026-24187, got:\n%s", strings.Join(findingLines(got), "\n"))
	}
}
