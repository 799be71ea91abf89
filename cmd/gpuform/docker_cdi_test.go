package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addDpkgPackage records an installed package in a simulated root.
func addDpkgPackage(t *testing.T, root, name, version string) {
	t.Helper()
	p := filepath.Join(root, "var/lib/dpkg/status")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	entry := "Package: " + name + "\nStatus: install ok installed\nPriority: optional\nArchitecture: amd64\nVersion: " + version + "\n\n"
	if err := os.WriteFile(p, append([]byte(entry), b...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Issue 21: container { runtime = "docker", cdi = true } generated the CDI
// spec but left daemon.json without "features": {"cdi": true}, so
// docker run --device nvidia.com/gpu=all failed on Docker 25.0 to 28.1.
// Now plan shows features.cdi (with a warning when the node's Docker
// release is unknown), apply writes it keeping every other key, the next
// plan is empty, verify passes, and verify fails once the key is removed.
func TestDockerCDIPlanApplyVerify(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := specDir(t, "  container {\n    runtime = \"docker\"\n    nvidia_container_toolkit = \"1.14.3\"\n    cdi = true\n  }")
	code, out, errOut := runPA(t, env, "", "plan", dir)
	if code != ExitOK || !strings.Contains(out, "features.cdi") || !strings.Contains(out+errOut, "Docker release is not known") {
		t.Fatalf("plan with no Docker release known: exit %d, want features.cdi and the reason\n%s\n%s", code, out, errOut)
	}
	root := simRoot(t, state, "hgx-h100-stale")
	addDpkgPackage(t, root, "docker-ce", "5:27.5.1-1~ubuntu.22.04~jammy")
	daemon := filepath.Join(root, "etc/docker/daemon.json")
	if err := os.WriteFile(daemon, []byte("{\n    \"log-driver\": \"json-file\",\n    \"features\": {\"containerd-snapshotter\": true}\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runPA(t, env, "", "plan", dir)
	if code != ExitOK || !strings.Contains(out, `+ features.cdi`) || strings.Contains(out+errOut, "not known") {
		t.Fatalf("plan on Docker 27.5.1: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(daemon)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		LogDriver string         `json:"log-driver"`
		Features  map[string]any `json:"features"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Features["cdi"] != true || got.Features["containerd-snapshotter"] != true || got.LogDriver != "json-file" {
		t.Fatalf("daemon.json after apply (%v):\n%s", err, b)
	}
	if code, out, errOut = runPA(t, env, "", "plan", dir); code != ExitOK || strings.Contains(out, "docker_daemon") {
		t.Errorf("plan after apply: exit %d\n%s\n%s", code, out, errOut)
	}
	code, checks, vout := verifyJSON(t, env, dir)
	if hasFailed(checks, "spec.docker_daemon") || hasFailed(checks, "spec.compare") {
		t.Errorf("verify after apply: exit %d\n%s", code, vout)
	}
	// Someone rewrites daemon.json without the features block.
	if err := os.WriteFile(daemon, []byte("{\n    \"log-driver\": \"json-file\",\n    \"runtimes\": {\"nvidia\": {\"path\": \"nvidia-container-runtime\", \"args\": []}}\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, checks, vout = verifyJSON(t, env, dir)
	if code != ExitReport || !hasFailed(checks, "spec.docker_daemon") {
		t.Fatalf("verify without features.cdi: exit %d\n%s", code, vout)
	}
	for _, cs := range checks {
		for _, c := range cs {
			if c.ID == "spec.docker_daemon" && (!strings.Contains(c.Observed, "features.cdi=(none)") || !strings.Contains(c.Expected, "features.cdi=true")) {
				t.Errorf("spec.docker_daemon: observed %q expected %q", c.Observed, c.Expected)
			}
		}
	}
}
