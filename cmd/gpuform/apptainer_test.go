package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// apptainerDefaultConf is the apptainer.conf Apptainer's build installs
// (see provision/resource/testdata/apptainer/SOURCE).
const apptainerDefaultConf = "../../provision/resource/testdata/apptainer/apptainer-default.conf"

// Issue 21: runtime = "apptainer" with its GPU directives. Plan shows each
// directive's change in the node's apptainer.conf, apply changes those
// values and not one other byte (nor the file's mode), the next plan is
// empty, and a hand edit of a directive fails verify's spec.apptainer_conf
// and is planned back.
func TestApptainerConfPlanApplyVerify(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := specDir(t, "  container {\n    runtime = \"apptainer\"\n    nvidia_container_toolkit = \"1.17.8\"\n    apptainer_use_nvidia_container_cli = true\n    apptainer_allow_setuid = false\n    apptainer_always_use_nv = true\n    apptainer_mount_dev = \"minimal\"\n  }")
	code, out, errOut := runPA(t, env, "", "plan", dir)
	if code != ExitOK || !strings.Contains(out+errOut, "/etc/apptainer/apptainer.conf is not on the node") {
		t.Fatalf("plan without apptainer.conf: exit %d\n%s\n%s", code, out, errOut)
	}
	root := simRoot(t, state, "hgx-h100-stale")
	conf := filepath.Join(root, "etc/apptainer/apptainer.conf")
	def, err := os.ReadFile(apptainerDefaultConf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, def, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(conf, 0o640); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runPA(t, env, "", "plan", dir)
	if code != ExitOK {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "~ apptainer_conf {") || strings.Contains(out, "docker_daemon") {
		t.Errorf("plan lacks apptainer_conf or configures Docker on an Apptainer node:\n%s", out)
	}
	for attr, change := range map[string]string{"allow setuid": `"yes" -> "no"`, "mount dev": `"yes" -> "minimal"`, "always use nv": `"no" -> "yes"`, "use nvidia-container-cli": `"no" -> "yes"`} {
		if got := planAttr(out, attr); !strings.HasSuffix(got, change) {
			t.Errorf("plan shows %s as %q, want %s:\n%s", attr, got, change, out)
		}
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	got, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer("\nallow setuid = yes\n", "\nallow setuid = no\n", "\nmount dev = yes\n", "\nmount dev = minimal\n",
		"\nalways use nv = no\n", "\nalways use nv = yes\n", "\nuse nvidia-container-cli = no\n", "\nuse nvidia-container-cli = yes\n").Replace(string(def))
	// gpuform's header (comment lines Apptainer skips) above the file.
	body := string(got)
	for strings.HasPrefix(body, "# Managed by gpuform") || strings.HasPrefix(body, "# Applied from ") {
		_, body, _ = strings.Cut(body, "\n")
	}
	if body != want {
		t.Errorf("apptainer.conf after apply is not the installed file with the four values changed:\n%s", got)
	}
	if st, err := os.Stat(conf); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("apptainer.conf mode after apply: %v %v", st.Mode(), err)
	}
	if code, out, errOut = runPA(t, env, "", "plan", dir); code != ExitOK || strings.Contains(out, "apptainer_conf") {
		t.Errorf("plan after apply: exit %d\n%s\n%s", code, out, errOut)
	}
	// An operator turns nvidia-container-cli off by hand.
	if err := os.WriteFile(conf, []byte(strings.Replace(string(got), "\nuse nvidia-container-cli = yes\n", "\nuse nvidia-container-cli = no\n", 1)), 0o640); err != nil {
		t.Fatal(err)
	}
	code, checks, vout := verifyJSON(t, env, dir)
	if code != ExitReport || !hasFailed(checks, "spec.apptainer_conf") {
		t.Errorf("verify after a hand edit: exit %d\n%s", code, vout)
	}
	if code, out, errOut = runPA(t, env, "", "plan", dir); code != ExitOK || !strings.HasSuffix(planAttr(out, "use nvidia-container-cli"), `"no" -> "yes"`) {
		t.Errorf("plan after a hand edit: exit %d\n%s\n%s", code, out, errOut)
	}
}

// Apptainer directives on another runtime are an error at the attribute,
// and mount dev takes only Apptainer's own words.
func TestApptainerSettingsValidated(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"docker":    {"  container {\n    runtime = \"docker\"\n    apptainer_always_use_nv = true\n  }", "Setting of another runtime"},
		"enroot":    {"  container {\n    runtime = \"enroot\"\n    apptainer_use_nvidia_container_cli = true\n  }", "apptainer_use_nvidia_container_cli configures Apptainer"},
		"mount dev": {"  container {\n    runtime = \"apptainer\"\n    apptainer_mount_dev = \"maybe\"\n  }", `Invalid value for "apptainer_mount_dev"`},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runPA(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "", "validate", specDir(t, tc.body))
			if code == ExitOK || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("validate: exit %d, want %q\n%s%s", code, tc.want, out, errOut)
			}
		})
	}
}

// planAttr returns what a plan shows for attribute attr, after its "=" ("" when
// it shows none).
func planAttr(out, attr string) string {
	for _, line := range strings.Split(out, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && strings.TrimSpace(strings.TrimPrefix(name, "~ ")) == attr {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
