package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 21: nvidia-ctk 1.18 and later configures containerd with a
// drop-in (/etc/containerd/conf.d/99-nvidia.toml) and an imports entry in
// config.toml. gpuform used to miss it and add a second nvidia runtime to
// config.toml, which the drop-in's CRI table then replaced. Now plan says
// the runtime is configured in the drop-in and changes nothing, apply
// leaves both files and containerd alone, verify passes naming the drop-in;
// after the drop-in is edited to disagree with the spec, plan and apply
// refuse naming the file and the key, and verify fails.
func TestContainerdDropInPlanApplyVerify(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := specDir(t, containerdSpec)
	runPA(t, env, "", "plan", dir)
	root := simRoot(t, state, "hgx-h100-stale")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("../../provision/resource/testdata/containerd", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	conf := filepath.Join(root, "etc/containerd/config.toml")
	dropIn := filepath.Join(root, "etc/containerd/conf.d/99-nvidia.toml")
	if err := os.MkdirAll(filepath.Dir(dropIn), 0o755); err != nil {
		t.Fatal(err)
	}
	confBytes, dropBytes := read("nvidia-ctk-default-config.toml"), read("nvidia-ctk-default-99-nvidia.toml")
	if err := os.WriteFile(conf, confBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dropIn, dropBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runPA(t, env, "", "plan", dir)
	if code != ExitOK || strings.Contains(out, "containerd_config") && strings.Contains(out, "runtimes.nvidia") || !strings.Contains(out+errOut, "/etc/containerd/conf.d/99-nvidia.toml") {
		t.Fatalf("plan over the drop-in: exit %d, want no containerd_config change and a note naming the drop-in\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	for p, want := range map[string][]byte{conf: confBytes, dropIn: dropBytes} {
		if got, _ := os.ReadFile(p); string(got) != string(want) {
			t.Errorf("apply changed %s:\n%s", p, got)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "var/log/gpuform-sim/calls.log")); strings.Contains(string(b), "restart containerd.service") {
		t.Errorf("apply restarted containerd for nothing")
	}
	code, checks, vout := verifyJSON(t, env, dir)
	found := false
	for _, cs := range checks {
		for _, c := range cs {
			if c.ID == "spec.containerd_config" {
				found = true
				if c.Status != "pass" || !strings.Contains(c.Observed, "configured_in=/etc/containerd/conf.d/99-nvidia.toml") {
					t.Errorf("spec.containerd_config: %+v", c)
				}
			}
		}
	}
	if !found || hasFailed(checks, "spec.containerd_config") || hasFailed(checks, "spec.compare") {
		t.Errorf("verify over the drop-in: exit %d\n%s", code, vout)
	}
	// Someone reruns nvidia-ctk without --set-as-default.
	edited := strings.Replace(string(dropBytes), `default_runtime_name = "nvidia"`, `default_runtime_name = "runc"`, 1)
	if err := os.WriteFile(dropIn, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runPA(t, env, "", "plan", dir)
	for _, want := range []string{"conflict", "/etc/containerd/conf.d/99-nvidia.toml", "default_runtime_name = runc, the spec wants nvidia", "does not edit a file it did not write"} {
		if !strings.Contains(out+errOut, want) {
			t.Errorf("plan over a disagreeing drop-in lacks %q: exit %d\n%s\n%s", want, code, out, errOut)
		}
	}
	if code == ExitOK {
		t.Errorf("plan over a disagreeing drop-in: exit 0")
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code == ExitOK {
		t.Errorf("apply over a disagreeing drop-in: exit 0\n%s\n%s", out, errOut)
	}
	if got, _ := os.ReadFile(dropIn); string(got) != edited {
		t.Errorf("apply edited the drop-in it did not write:\n%s", got)
	}
	if got, _ := os.ReadFile(conf); string(got) != string(confBytes) {
		t.Errorf("apply edited config.toml under a drop-in:\n%s", got)
	}
	code, checks, vout = verifyJSON(t, env, dir)
	if code == ExitOK || !hasFailed(checks, "spec.compare") || !strings.Contains(vout, "default_runtime_name = runc") {
		t.Errorf("verify over a disagreeing drop-in: exit %d\n%s", code, vout)
	}
}
