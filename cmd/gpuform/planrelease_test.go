package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// simRepo is the repository list of a simulated node (NAME VERSION lines,
// what its apt-cache and dnf stand-ins offer).
func simRepo(root string) string { return filepath.Join(root, "var/lib/gpuform-sim/repo.txt") }

// editSimRepo rewrites a simulated node's repository list: drop removes
// every line starting with one of its prefixes, add appends lines.
func editSimRepo(t *testing.T, root string, drop []string, add ...string) {
	t.Helper()
	b, err := os.ReadFile(simRepo(root))
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		dropped := false
		for _, d := range drop {
			dropped = dropped || strings.HasPrefix(line, d)
		}
		if !dropped && line != "" {
			keep = append(keep, line)
		}
	}
	keep = append(keep, add...)
	if err := os.WriteFile(simRepo(root), []byte(strings.Join(keep, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// planChange is a resource change of plan -json, with the fields this
// file is about.
type planChange struct {
	Resource    string            `json:"resource"`
	VersionFrom string            `json:"version_from"`
	Releases    map[string]string `json:"releases"`
	Unresolved  string            `json:"version_unresolved"`
	After       map[string]any    `json:"after"`
}

func planChanges(t *testing.T, env []string, dir string) map[string]planChange {
	t.Helper()
	code, out, errOut := runPA(t, env, "", "plan", "-json", dir)
	var doc struct {
		FormatVersion string `json:"format_version"`
		Hosts         []struct {
			Error           string       `json:"error"`
			ResourceChanges []planChange `json:"resource_changes"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitOK || len(doc.Hosts) != 1 || doc.Hosts[0].Error != "" {
		t.Fatalf("plan -json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if doc.FormatVersion != "2.4" {
		t.Errorf("format_version %q, want 2.3 (version_from, releases and version_unresolved were added)", doc.FormatVersion)
	}
	m := map[string]planChange{}
	for _, rc := range doc.Hosts[0].ResourceChanges {
		m[rc.Resource] = rc
	}
	return m
}

// TestPlanShowsResolvedRelease (issue 30, item 3): a floating driver
// branch is resolved on the host against what its repository offers and
// shown as the release with where it came from; the saved plan pins it,
// and apply of that plan installs exactly it although the repository
// published a newer release of the branch since.
func TestPlanShowsResolvedRelease(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	root := filepath.Join(state, "hgx-h100-stale")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `node "n" {
  hosts = ["sim://hgx-h100-stale"]
  driver {
    version       = "580"
    kernel_module = "open"
  }
  container {
    runtime        = "enroot"
    enroot_version = "4.1"
  }
}
`)
	code, out, errOut := runPA(t, env, "", "plan", "-detailed-exitcode", dir)
	// The profile's repository (provision/sim/roots) offers nvidia-open
	// 580.95.05-0ubuntu1 and 580.159.03-0ubuntu1, enroot 4.1.1-1 and
	// 4.1.2-1: the newest of each is what apt would install.
	for _, re := range []string{
		`~ version +?= "535.183.06" -> "580.159.03" \(from "580"\)`,
		`\+ version +?= "4.1.2" \(from "4.1"\)`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("plan lacks %s (exit %d):\n%s\n%s", re, code, out, errOut)
		}
	}
	if code != ExitReport {
		t.Errorf("plan: exit %d, want 2", code)
	}
	rc := planChanges(t, env, dir)
	if d := rc["driver_package"]; d.VersionFrom != "580" || d.Releases["nvidia-open"] != "580.159.03-0ubuntu1" || d.After["version"] != "580.159.03" {
		t.Errorf("driver_package in JSON: %+v", d)
	}
	if e := rc["enroot_package"]; e.VersionFrom != "4.1" || e.Releases["enroot"] != "4.1.2-1" {
		t.Errorf("enroot_package in JSON: %+v", e)
	}

	saved := filepath.Join(t.TempDir(), "plan.json")
	if code, out, errOut := runPA(t, env, "", "plan", "-out", saved, dir); code != ExitOK {
		t.Fatalf("plan -out: exit %d\n%s\n%s", code, out, errOut)
	}
	// A newer release of the branch is published after the plan was
	// reviewed: the saved plan still installs what it showed.
	editSimRepo(t, root, nil, "nvidia-open 580.200.01-0ubuntu1", "enroot 4.1.9-1")
	code, out, errOut = runPA(t, env, "", "apply", saved)
	if code != ExitOK {
		t.Fatalf("apply of the saved plan: exit %d\n%s\n%s", code, out, errOut)
	}
	calls := strings.Join(changingCalls(t, root), "\n")
	for _, want := range []string{"nvidia-open=580.159.03-0ubuntu1", "enroot=4.1.2-1"} {
		if !strings.Contains(calls, want) {
			t.Errorf("apply did not install %s:\n%s", want, calls)
		}
	}
	for _, not := range []string{"580.200.01", "4.1.9", "580.*", "4.1.*"} {
		if strings.Contains(calls, not) {
			t.Errorf("apply asked the package manager for %s, not the release the plan showed:\n%s", not, calls)
		}
	}
}

// TestPlanSaysWhenTheReleaseIsUnknown: on a host whose package manager
// has no repository metadata at all (apt-get update never ran), plan
// cannot know the release without the network and says so, instead of
// showing the branch as if it were one.
func TestPlanSaysWhenTheReleaseIsUnknown(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	root := filepath.Join(state, "hgx-h100-stale")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"sim://hgx-h100-stale\"]\n  container {\n    runtime        = \"enroot\"\n    enroot_version = \"4.1\"\n  }\n}\n")
	if code, out, errOut := runPA(t, env, "", "facts", dir); code != ExitOK {
		t.Fatalf("facts: exit %d\n%s\n%s", code, out, errOut)
	}
	if err := os.WriteFile(simRepo(root), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runPA(t, env, "", "plan", dir)
	for _, want := range []string{
		`+ version = "4.1" (release known after apply)`,
		"# version: the release of 4.1 is known only after apply: apt's package lists on this host are empty (apt-get update never ran)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q (exit %d):\n%s\n%s", want, code, out, errOut)
		}
	}
	if code != ExitOK {
		t.Errorf("plan: exit %d, want 0: apply can still refresh the lists", code)
	}
	if rc := planChanges(t, env, dir)["enroot_package"]; !strings.Contains(rc.Unresolved, "apt-get update never ran") || rc.VersionFrom != "" || len(rc.Releases) != 0 {
		t.Errorf("enroot_package in JSON: %+v", rc)
	}
}

// TestPlanRefusesReleaseNoRepositoryOffers (issue 30, item 5):
// examples/slurm-enroot on its simulated node plans and applies; with
// enroot 4.1.2 gone from the node's repository, plan fails the host naming
// the packages, the release, the package manager and that no repository
// offers it, and apply stops before its first step: the driver is not
// touched. A saved plan made while the release was offered is refused the
// same way once it is gone.
func TestPlanRefusesReleaseNoRepositoryOffers(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../../examples/slurm-enroot/main.gpuform.hcl")
	if err != nil {
		t.Fatal(err)
	}
	const inventory = `hosts  = ["gpu[001-016].dc1.example.com"]`
	if !strings.Contains(string(src), inventory) || !strings.Contains(string(src), `enroot_version = "4.1.2"`) {
		t.Fatal("examples/slurm-enroot changed its inventory or its enroot release; update this test")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), strings.Replace(string(src), inventory, `hosts  = ["sim://hgx-h100-stale"]`, 1))

	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	root := filepath.Join(state, "hgx-h100-stale")
	saved := filepath.Join(t.TempDir(), "plan.json")
	code, out, errOut := runPA(t, env, "", "plan", "-out", saved, dir)
	if code != ExitOK || strings.Contains(out, "Error:") {
		t.Fatalf("plan of the example: exit %d\n%s\n%s", code, out, errOut)
	}

	editSimRepo(t, root, []string{"enroot 4.1.2", "enroot+caps 4.1.2"})
	code, out, errOut = runPA(t, env, "", "plan", dir)
	text := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"the spec cannot be applied to this host:",
		"package release: expected enroot 4.1.2-1 (enroot_package) from a repository of the host; found no repository apt uses on this host offers it: apt offers enroot 4.1.1-1",
		"package release: expected enroot+caps 4.1.2-1 (enroot_package) from a repository of the host; found no repository apt uses on this host offers it: apt offers enroot+caps 4.1.1-1",
		"https://github.com/NVIDIA/enroot/releases/download/v4.1.2/enroot_4.1.2-1_amd64.deb",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if code != ExitFailed || strings.Contains(out, "driver_package {") {
		t.Errorf("plan: exit %d, want 1 and no changes shown:\n%s\n%s", code, out, errOut)
	}

	for _, args := range [][]string{{"apply", "-auto-approve", dir}, {"apply", saved}} {
		code, out, errOut = runPA(t, env, "", args...)
		if code != ExitFailed || !strings.Contains(strings.Join(strings.Fields(out+errOut), " "), "enroot 4.1.2-1 (enroot_package)") {
			t.Errorf("%s: exit %d, want 1 naming enroot 4.1.2\n%s\n%s", strings.Join(args[:len(args)-1], " "), code, out, errOut)
		}
		if calls := changingCalls(t, root); len(calls) > 0 {
			t.Errorf("%s ran steps although a release is missing: %q", strings.Join(args[:len(args)-1], " "), calls)
		}
	}
	if status, err := os.ReadFile(filepath.Join(root, "var/lib/dpkg/status")); err != nil || !strings.Contains(string(status), "Package: cuda-drivers-535\n") {
		t.Errorf("the driver was touched (%v)", err)
	}

	// With the release back, the example applies.
	editSimRepo(t, root, nil, "enroot 4.1.2-1", "enroot+caps 4.1.2-1")
	if code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply of the example: exit %d\n%s\n%s", code, out, errOut)
	}
	if calls := strings.Join(changingCalls(t, root), "\n"); !strings.Contains(calls, "enroot=4.1.2-1 enroot+caps=4.1.2-1") {
		t.Errorf("enroot was not installed at exactly 4.1.2-1:\n%s", calls)
	}
}
