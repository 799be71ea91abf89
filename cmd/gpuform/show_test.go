package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShowSavedPlan saves a plan and shows it again without the host: the
// text is plan's own (without the "Saved the plan" advice) and -json is
// the document plan -json printed when it saved the file.
func TestShowSavedPlan(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	planFile := filepath.Join(t.TempDir(), "gpuform.plan")
	code, planText, errOut := runPA(t, env, "", "plan", "-out", planFile, "testdata/planapply")
	if code != ExitOK {
		t.Fatalf("plan -out: exit %d\n%s", code, errOut)
	}
	want, _, ok := strings.Cut(planText, "\nSaved the plan to: ")
	if !ok || !strings.Contains(want, "to add") {
		t.Fatalf("plan -out printed no plan and save note:\n%s", planText)
	}
	code, out, errOut := runPA(t, env, "", "show", planFile)
	if code != ExitOK || out != want {
		t.Errorf("show: exit %d, stderr %q\ngot:\n%s\nwant (plan's text):\n%s", code, errOut, out, want)
	}

	jsonFile := filepath.Join(t.TempDir(), "json.plan")
	code, planJSON, errOut := runPA(t, env, "", "plan", "-json", "-out", jsonFile, "testdata/planapply")
	if code != ExitOK || !strings.Contains(planJSON, `"format_version"`) {
		t.Fatalf("plan -json -out: exit %d\n%s\n%s", code, planJSON, errOut)
	}
	for _, form := range [][]string{{"show", "-json", jsonFile}, {"show", "--json", jsonFile}, {"show", jsonFile, "-json"}} {
		code, out, errOut = runPA(t, env, "", form...)
		if code != ExitOK || out != planJSON {
			t.Errorf("%s: exit %d, stderr %q\ngot:\n%s\nwant (plan -json):\n%s", strings.Join(form, " "), code, errOut, out, planJSON)
		}
	}
}

// TestShowRefuses: show reads only gpuform plan files of a format version
// it knows, and says what it wanted.
func TestShowRefuses(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := t.TempDir()
	planFile := filepath.Join(dir, "gpuform.plan")
	if code, _, errOut := runPA(t, env, "", "plan", "-out", planFile, "testdata/planapply"); code != ExitOK {
		t.Fatalf("plan -out: exit %d\n%s", code, errOut)
	}
	saved, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	version := `"format_version": "2.4"`
	if !strings.Contains(string(saved), version) {
		t.Fatalf("plan file has no %s:\n%.300s", version, saved)
	}
	writeFile(t, filepath.Join(dir, "old.plan"), strings.Replace(string(saved), version, `"format_version": "1.0"`, 1))
	writeFile(t, filepath.Join(dir, "other.json"), `{"format_version": "2.4", "hosts": []}`)
	writeFile(t, filepath.Join(dir, "spec.gpuform.hcl"), "node \"n\" {}\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"older format", []string{"show", filepath.Join(dir, "old.plan")}, "plan file format 1.0 cannot be read by this gpuform"},
		{"older format json", []string{"show", "-json", filepath.Join(dir, "old.plan")}, "plan file format 1.0 cannot be read by this gpuform"},
		{"other json", []string{"show", filepath.Join(dir, "other.json")}, "not a gpuform plan file"},
		{"hcl", []string{"show", filepath.Join(dir, "spec.gpuform.hcl")}, "not a gpuform plan file"},
		{"directory", []string{"show", dir}, "is a directory"},
		{"missing", []string{"show", filepath.Join(dir, "nope.plan")}, "no such file"},
		{"no argument", []string{"show"}, "show takes one argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runPA(t, env, "", tc.args...)
			if code != ExitFailed || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, want 1 and %q\nstdout: %s\nstderr: %s", code, tc.want, out, errOut)
			}
		})
	}
}
