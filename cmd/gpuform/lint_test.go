package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLintExamplesClean(t *testing.T) {
	for _, dir := range exampleDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			if code, out, errOut := runCLI(t, "", "lint", dir); code != ExitOK {
				t.Errorf("exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}

func TestLintBrokenSpec(t *testing.T) {
	dir := "../../lint/testdata/broken-training-cluster"
	code, out, _ := runCLI(t, "", "lint", "-format", "compact", dir)
	if code != ExitReport {
		t.Fatalf("exit %d, want 2\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 10 || !strings.Contains(lines[0], "main.gpuform.hcl:") || !strings.Contains(out, " error ") {
		t.Errorf("compact output:\n%s", out)
	}

	code, out, _ = runCLI(t, "", "lint", "-format", "json", dir)
	var doc struct {
		Valid       bool
		Diagnostics []struct{ Rule, Severity string }
	}
	err := json.Unmarshal([]byte(out), &doc)
	ruled := 0
	for _, d := range doc.Diagnostics {
		if d.Rule != "" {
			ruled++
		}
	}
	// Every finding names its rule; the one diagnostic without a rule is the
	// spec's own deprecation warning for the node-level tensor_parallel.
	if err != nil || code != ExitReport || doc.Valid || ruled == 0 || ruled != len(doc.Diagnostics)-1 {
		t.Errorf("json: exit %d err %v %+v", code, err, doc)
	}

	code, out, _ = runCLI(t, "", "lint", "-format", "sarif", dir)
	var sarif struct {
		Version string
		Runs    []struct{ Results []any }
	}
	if err := json.Unmarshal([]byte(out), &sarif); err != nil || code != ExitReport || sarif.Version != "2.1.0" || len(sarif.Runs[0].Results) < 10 {
		t.Errorf("sarif: exit %d err %v %+v", code, err, sarif)
	}
}

// A warning fails the run only with -min-severity warning, and a lint
// configuration file beside the spec can switch the rule off.
func TestLintMinSeverityAndConfigFile(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/quickstart/main.gpuform.hcl")
	if err != nil {
		t.Fatal(err)
	}
	// Turning NUMA balancing on for a 2-socket box is a warning.
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), strings.Replace(string(src), "balancing = false", "balancing = true", 1))
	if code, out, _ := runCLI(t, "", "lint", dir); code != ExitOK || !strings.Contains(out, "numa_balancing") {
		t.Fatalf("default threshold: exit %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "", "lint", "-min-severity", "warning", dir); code != ExitReport {
		t.Errorf("-min-severity warning: exit %d, want 2", code)
	}
	writeFile(t, filepath.Join(dir, ".gpuform-lint.hcl"), "lint {\n  rule \"numa_balancing\" {\n    enabled = false\n  }\n}\n")
	if code, out, _ := runCLI(t, "", "lint", "-min-severity", "warning", dir); code != ExitOK || strings.Contains(out, "numa_balancing") {
		t.Errorf("with .gpuform-lint.hcl: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCLI(t, "", "lint", "-format", "xml", dir); code != ExitFailed || !strings.Contains(errOut, "unknown format") {
		t.Errorf("bad -format: exit %d %s", code, errOut)
	}
}

// A floating driver branch is a warning unless the lock file pins it.
func TestLintReadsLockFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"gpu1\"]\n  cuda {\n    version = \"12.8\"\n  }\n}\n")
	if code, out, _ := runCLI(t, "", "lint", "-format", "compact", "-min-severity", "warning", dir); code != ExitReport || !strings.Contains(out, "version_not_pinned") {
		t.Fatalf("without lock: exit %d\n%s", code, out)
	}
	writeFile(t, filepath.Join(dir, ".gpuform.lock.hcl"), "node \"n\" {\n  cuda = \"12.8.1\"\n}\n")
	if code, out, _ := runCLI(t, "", "lint", "-format", "compact", "-min-severity", "warning", dir); strings.Contains(out, "version_not_pinned") {
		t.Errorf("with lock: exit %d\n%s", code, out)
	}
	writeFile(t, filepath.Join(dir, ".gpuform.lock.hcl"), "node \"n\" {\n  cuda = \"12\"\n}\n")
	if code, out, _ := runCLI(t, "", "lint", dir); code != ExitFailed || !strings.Contains(out, "Invalid locked version") {
		t.Errorf("bad lock: exit %d\n%s", code, out)
	}
}
