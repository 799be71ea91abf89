package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 21: runtime = "enroot" with its GPU-node settings. Apply writes
// the enroot.conf.d drop-in (the operator's enroot.conf untouched), the
// next plan is empty, and a hand edit fails verify's spec.enroot_conf.
func TestEnrootConfPlanApplyVerify(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := specDir(t, "  container {\n    runtime = \"enroot\"\n    nvidia_container_toolkit = \"1.14.3\"\n    enroot_cache_path = \"/raid/enroot/cache/group-$(id -g)\"\n    enroot_data_path = \"/raid/enroot/data/user-$(id -u)\"\n    enroot_restrict_dev = true\n  }")
	code, out, errOut := runPA(t, env, "", "plan", dir)
	if code != ExitOK || !strings.Contains(out, "enroot_conf") || !strings.Contains(out, "ENROOT_DATA_PATH") {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	root := simRoot(t, state, "hgx-h100-stale")
	own := filepath.Join(root, "etc/enroot/enroot.conf")
	if err := os.MkdirAll(filepath.Dir(own), 0o755); err != nil {
		t.Fatal(err)
	}
	mine := "ENROOT_SQUASH_OPTIONS -noI -noD -noF -noX -no-duplicates\n"
	if err := os.WriteFile(own, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	conf := filepath.Join(root, "etc/enroot/enroot.conf.d/90-gpuform.conf")
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nENROOT_CACHE_PATH /raid/enroot/cache/group-$(id -g)\n", "\nENROOT_DATA_PATH /raid/enroot/data/user-$(id -u)\n", "\nENROOT_RESTRICT_DEV yes\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q:\n%s", conf, want, b)
		}
	}
	if got, _ := os.ReadFile(own); string(got) != mine {
		t.Errorf("the operator's enroot.conf changed:\n%s", got)
	}
	if code, out, errOut = runPA(t, env, "", "plan", dir); code != ExitOK || strings.Contains(out, "enroot_conf") {
		t.Errorf("plan after apply: exit %d\n%s\n%s", code, out, errOut)
	}
	if err := os.WriteFile(conf, []byte(strings.Replace(string(b), "ENROOT_RESTRICT_DEV yes", "ENROOT_RESTRICT_DEV no", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, checks, vout := verifyJSON(t, env, dir)
	if code != ExitReport || !hasFailed(checks, "spec.enroot_conf") {
		t.Errorf("verify after a hand edit: exit %d\n%s", code, vout)
	}
}

// enroot expands its config values in a shell: a path with anything else
// of shell syntax is refused in the spec, and enroot settings on another
// runtime are an error, not ignored.
func TestEnrootSettingsValidated(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"shell":    {"  container {\n    runtime = \"enroot\"\n    enroot_data_path = \"/raid/$(rm -rf /)\"\n  }", "Invalid enroot path"},
		"relative": {"  container {\n    runtime = \"enroot\"\n    enroot_cache_path = \"raid/cache\"\n  }", "Invalid enroot path"},
		"docker":   {"  container {\n    runtime = \"docker\"\n    enroot_restrict_dev = true\n  }", "Setting of another runtime"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runPA(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "", "validate", specDir(t, tc.body))
			if code == ExitOK || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("validate: exit %d, want %q\n%s%s", code, tc.want, out, errOut)
			}
		})
	}
}

// Issue 21: pyxis = true loads pyxis into Slurm with the line its own
// pyxis.conf holds, naming the plugin where its package put it. Without
// the plugin on the node, plan says to install it instead of writing a
// "required" line that would stop slurmd.
func TestPyxisPlugstack(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := specDir(t, "  container {\n    runtime = \"enroot\"\n    nvidia_container_toolkit = \"1.14.3\"\n    pyxis = true\n  }")
	code, out, errOut := runPA(t, env, "", "plan", dir)
	if code == ExitOK || !strings.Contains(out+errOut, "pyxis is not installed") {
		t.Fatalf("plan without the plugin: exit %d\n%s\n%s", code, out, errOut)
	}
	root := simRoot(t, state, "hgx-h100-stale")
	plugin := filepath.Join(root, "usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so")
	if err := os.MkdirAll(filepath.Dir(plugin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, []byte("\x7fELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	conf := filepath.Join(root, "etc/slurm/plugstack.conf.d/pyxis.conf")
	b, err := os.ReadFile(conf)
	if err != nil || !strings.HasSuffix(string(b), "\nrequired /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so\n") {
		t.Fatalf("%s after apply (%v):\n%s", conf, err, b)
	}
	if code, out, errOut = runPA(t, env, "", "plan", dir); code != ExitOK || strings.Contains(out, "pyxis_plugstack") {
		t.Errorf("plan after apply: exit %d\n%s\n%s", code, out, errOut)
	}
	// The package's own pyxis.conf (the line alone, no header) is adopted,
	// not rewritten.
	if err := os.WriteFile(conf, []byte("required /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut = runPA(t, env, "", "plan", dir); code != ExitOK || strings.Contains(out, "pyxis_plugstack") {
		t.Errorf("plan over the package's pyxis.conf: exit %d\n%s\n%s", code, out, errOut)
	}
	// optional instead of required: a job would run without its container.
	if err := os.WriteFile(conf, []byte("optional /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, checks, vout := verifyJSON(t, env, dir)
	if code != ExitReport || !hasFailed(checks, "spec.pyxis_plugstack") {
		t.Errorf("verify over an optional line: exit %d\n%s", code, vout)
	}
}
