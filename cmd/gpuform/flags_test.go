package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/diagview"
	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/spec"
)

// TestFlagErrorsAsTyped checks pflag's errors name flags the way the user
// wrote them (one dash or two) and that an unknown flag lists the nearest
// ones, as a mistyped subcommand does.
func TestFlagErrorsAsTyped(t *testing.T) {
	dir := "testdata/planapply"
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"one dash", []string{"plan", "-tagret", "x", dir}, "Error: unknown flag: -tagret\n\nDid you mean this?\n\t-target\n"},
		{"two dashes", []string{"plan", "--tagret", "x", dir}, "Error: unknown flag: --tagret\n\nDid you mean this?\n\t--target\n"},
		{"with value", []string{"verify", "-tierr=quick", dir}, "Error: unknown flag: -tierr\n\nDid you mean this?\n\t-tier\n"},
		{"inherited flag", []string{"plan", "-no-colour", dir}, "Error: unknown flag: -no-colour\n\nDid you mean this?\n\t-no-color\n"},
		{"nothing near", []string{"plan", "-zzzzzzzz", dir}, "Error: unknown flag: -zzzzzzzz\n"},
		{"bad value", []string{"plan", "-parallelism", "abc", dir}, "Error: invalid argument \"abc\" for \"-parallelism\" flag: a whole number is required\n"},
		{"missing value", []string{"plan", dir, "-target"}, "Error: flag needs an argument: -target\n"},
		{"json alias conflict", []string{"lint", "-json", "-format", "sarif", dir}, "Error: -json conflicts with -format sarif: give one of them\n"},
		{"json alias conflict two dashes", []string{"lint", "--json", "--format=sarif", dir}, "Error: --json conflicts with --format sarif: give one of them\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			if code != ExitFailed {
				t.Errorf("exit %d, want 1", code)
			}
			if errOut != tc.wantErr {
				t.Errorf("stderr:\n%q\nwant:\n%q", errOut, tc.wantErr)
			}
			if out != "" {
				t.Errorf("stdout not empty: %q", out)
			}
		})
	}
}

// TestJSONFlagIsFormatJSON checks -json on lint and verify writes the same
// document as -format json.
func TestJSONFlagIsFormatJSON(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := "testdata/planapply"
	for _, cmd := range []string{"lint", "verify"} {
		t.Run(cmd, func(t *testing.T) {
			c1, viaFormat, e1 := runPA(t, env, "", cmd, "-format", "json", dir)
			c2, viaJSON, e2 := runPA(t, env, "", cmd, "-json", dir)
			if c1 != c2 {
				t.Errorf("exit %d with -format json, %d with -json\n%s\n%s", c1, c2, e1, e2)
			}
			a, b := jsonKeys(t, viaFormat), jsonKeys(t, viaJSON)
			if !slices.Equal(a, b) {
				t.Errorf("-json keys %v, -format json keys %v", b, a)
			}
			if cmd == "lint" && viaFormat != viaJSON {
				t.Errorf("lint -json differs from -format json:\n%s\n%s", viaJSON, viaFormat)
			}
		})
	}
}

// jsonKeys parses one JSON object and returns its top-level keys, sorted.
func jsonKeys(t *testing.T, doc string) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, doc)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestApplyJSONSummary checks apply -json ends with the counts of the text
// summary, consistent with the hosts it lists and the exit status.
func TestApplyJSONSummary(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", "-json", "testdata/planapply")
	var doc struct {
		Hosts []struct {
			Status string `json:"status"`
		} `json:"hosts"`
		Summary *struct {
			Hosts         int  `json:"hosts"`
			Succeeded     int  `json:"succeeded"`
			RebootPending int  `json:"reboot_pending"`
			Rebooted      int  `json:"rebooted"`
			Failed        int  `json:"failed"`
			Skipped       int  `json:"skipped"`
			Converged     bool `json:"converged"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not one JSON document: %v\n%s\n%s", err, out, errOut)
	}
	if doc.Summary == nil {
		t.Fatalf("no summary object:\n%s", out)
	}
	if len(doc.Hosts) == 0 {
		t.Fatalf("no hosts:\n%s", out)
	}
	count := map[string]int{}
	for _, h := range doc.Hosts {
		count[h.Status]++
	}
	s := doc.Summary
	got := map[string]int{"succeeded": s.Succeeded, "reboot pending": s.RebootPending, "rebooted": s.Rebooted, "failed": s.Failed, "skipped": s.Skipped}
	for status, n := range got {
		if count[status] != n {
			t.Errorf("summary %s = %d, hosts with that status: %d", status, n, count[status])
		}
	}
	if s.Hosts != len(doc.Hosts) {
		t.Errorf("summary hosts = %d, want %d", s.Hosts, len(doc.Hosts))
	}
	if s.Converged != (code == ExitOK) {
		t.Errorf("converged = %v with exit %d", s.Converged, code)
	}
}

// TestCompletionShells checks completion writes scripts for the shells
// cobra knows and fails (exit 1) for any other instead of printing help.
func TestCompletionShells(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		t.Run(sh, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", "completion", sh)
			if code != ExitOK || !strings.Contains(out, "gpuform") {
				t.Errorf("exit %d\nstdout: %.200s\nstderr: %s", code, out, errOut)
			}
		})
	}
	t.Run("tcsh", func(t *testing.T) {
		code, out, errOut := runCLI(t, "", "completion", "tcsh")
		if code != ExitFailed {
			t.Errorf("exit %d, want 1", code)
		}
		if want := "Error: unknown shell \"tcsh\" for completion: gpuform writes scripts for bash, zsh, fish, powershell\n"; errOut != want {
			t.Errorf("stderr %q, want %q", errOut, want)
		}
		if out != "" {
			t.Errorf("stdout not empty: %.200s", out)
		}
	})
	t.Run("no shell", func(t *testing.T) {
		code, out, _ := runCLI(t, "", "completion")
		if code != ExitOK || !strings.Contains(out, "Available Commands:") {
			t.Errorf("exit %d, stdout %.300s", code, out)
		}
	})
}

// TestFlagValueCompletion checks the shell completion of enum flag values
// and of -target from the spec's hosts, through cobra's __complete request
// (what the completion scripts run).
func TestFlagValueCompletion(t *testing.T) {
	dir := "testdata/planapply"
	cfg, diags := spec.Load(dir, spec.LoadOptions{BuiltinModules: modules.FS(), BinaryVersion: Version})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	hosts, _ := target.Select(cfg, nil)
	var hostNames []string
	for _, h := range hosts {
		hostNames = append(hostNames, h.Host.Name)
	}
	if len(hostNames) == 0 {
		t.Fatal("test spec has no hosts")
	}
	var tiers, lintFormats []string
	for _, tr := range verify.Tiers() {
		tiers = append(tiers, string(tr))
	}
	for _, f := range diagview.Formats {
		lintFormats = append(lintFormats, string(f))
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"verify tier", []string{"verify", "-tier", ""}, tiers},
		{"verify format", []string{"verify", "-format", ""}, []string{"text", "json", "junit", "prometheus"}},
		{"lint format", []string{"lint", "-format", ""}, lintFormats},
		{"lint min-severity", []string{"lint", "-min-severity", ""}, []string{"error", "warning", "info"}},
		{"graph format", []string{"graph", "-format", ""}, []string{"text", "dot", "svg", "png"}},
		{"plan target", []string{"plan", dir, "-target", ""}, hostNames},
		{"apply target", []string{"apply", dir, "-target", ""}, hostNames},
		{"verify target", []string{"verify", dir, "-target", ""}, hostNames},
		{"facts target", []string{"facts", dir, "-target", ""}, hostNames},
		{"target prefix", []string{"plan", dir, "-target", hostNames[0]}, []string{hostNames[0]}},
		{"target no match", []string{"plan", dir, "-target", "no-such-host"}, nil},
		{"spec does not load", []string{"plan", "testdata/no-such-dir", "-target", ""}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"__complete"}, tc.args...)...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			got, directive := lines[:len(lines)-1], lines[len(lines)-1]
			if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("completions %q, want %q", got, tc.want)
			}
			// 4 is ShellCompDirectiveNoFileComp: a value is never a file.
			if directive != ":4" {
				t.Errorf("directive %q, want :4", directive)
			}
		})
	}
}
