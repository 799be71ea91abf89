package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// containerdSpec asks for the NVIDIA runtime as containerd's default on the
// simulated node, at the toolkit release the node has.
const containerdSpec = "  container {\n    runtime = \"containerd\"\n    nvidia_container_toolkit = \"1.14.3\"\n    default_runtime = true\n  }"

// stripHeader drops the header lines gpuform puts on top of a file it edits.
func stripHeader(s string) string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "# Managed by gpuform") && !strings.HasPrefix(l, "# Applied from ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// Issue 21: runtime = "containerd" got a plan warning and nothing else.
// Now plan shows containerd_config, apply edits config.toml key by key
// (containerd 1.6's real default config, mode 0600 kept), restarts
// containerd once, the next plan is empty, and a hand edit of the runtime
// fails verify's spec.containerd_config.
func TestContainerdConfigPlanApplyVerify(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := specDir(t, containerdSpec)
	code, out, errOut := runPA(t, env, "", "plan", dir)
	// The plan names the file it writes (issue 30 item 8).
	if code != ExitOK || !strings.Contains(out, "# containerd_config (/etc/containerd/config.toml) will be") || strings.Contains(out+errOut, "does not manage containerd") {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	root := simRoot(t, state, "hgx-h100-stale")
	input, err := os.ReadFile("../../provision/resource/testdata/containerd/containerd-1.6-default.toml")
	if err != nil {
		t.Fatal(err)
	}
	input = append([]byte("# Site settings: keep.\n"), input...)
	conf := filepath.Join(root, "etc/containerd/config.toml")
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, input, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runPA(t, env, "", "plan", dir)
	if code != ExitOK {
		t.Errorf("plan after the hand-written config.toml: exit %d", code)
	}
	for _, want := range []string{`runtimes.nvidia.options.BinaryName`, `"/usr/bin/nvidia-container-runtime"`, `default_runtime_name`, `"runc" -> "nvidia"`, "containerd.service"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s%s", want, out, errOut)
		}
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	got, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("../../provision/resource/testdata/containerd/default-1.6.golden")
	if err != nil {
		t.Fatal(err)
	}
	// The golden edit is made with toolkit 1.17.3, which adds enable_cdi;
	// 1.14.3 generates CDI specs too, so the files are the same.
	if diff := cmp.Diff("# Site settings: keep.\n"+string(golden), stripHeader(string(got))); diff != "" {
		t.Errorf("config.toml after apply (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(string(got), "# Managed by gpuform") {
		t.Errorf("no gpuform header naming the spec:\n%.200s", got)
	}
	if fi, err := os.Stat(conf); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config.toml mode after apply: %v %v, want 0600", fi.Mode(), err)
	}
	restarts := func() int {
		b, _ := os.ReadFile(filepath.Join(root, "var/log/gpuform-sim/calls.log"))
		return strings.Count(string(b), "systemctl try-restart containerd.service")
	}
	if n := restarts(); n != 1 {
		t.Errorf("containerd restarted %d times by apply, want 1", n)
	}
	// Converged: nothing to plan, and a second apply restarts nothing.
	if code, out, errOut = runPA(t, env, "", "plan", dir); code != ExitOK || strings.Contains(out, "containerd_config") {
		t.Errorf("plan after apply: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK || restarts() != 1 {
		t.Errorf("second apply: exit %d, %d restarts\n%s\n%s", code, restarts(), out, errOut)
	}
	if code, checks, out := verifyJSON(t, env, dir); code != ExitOK && hasFailed(checks, "spec.containerd_config") {
		t.Errorf("verify after apply: exit %d\n%s", code, out)
	}
	// Someone points the nvidia runtime elsewhere.
	edited := strings.Replace(string(got), `BinaryName = "/usr/bin/nvidia-container-runtime"`, `BinaryName = "/opt/old/nvidia-container-runtime"`, 1)
	if edited == string(got) {
		t.Fatal("no BinaryName line to drift")
	}
	if err := os.WriteFile(conf, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	code, checks, vout := verifyJSON(t, env, dir)
	if code != ExitReport || !hasFailed(checks, "spec.containerd_config") {
		t.Fatalf("verify after drift: exit %d\n%s", code, vout)
	}
	for _, cs := range checks {
		for _, c := range cs {
			if c.ID == "spec.containerd_config" && (!strings.Contains(c.Observed, "/opt/old/nvidia-container-runtime") || !strings.Contains(c.Expected, "/usr/bin/nvidia-container-runtime")) {
				t.Errorf("spec.containerd_config: observed %q expected %q", c.Observed, c.Expected)
			}
		}
	}
}

func hasFailed(hosts map[string][]verifyCheck, id string) bool {
	for _, cs := range hosts {
		for _, c := range cs {
			if c.ID == id && (c.Status == "fail" || c.Status == "error") {
				return true
			}
		}
	}
	return false
}

// A config.toml that is not TOML is refused with the reason, not rewritten.
func TestContainerdConfigNotTOMLIsRefused(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := specDir(t, containerdSpec)
	runPA(t, env, "", "plan", dir)
	root := simRoot(t, state, "hgx-h100-stale")
	conf := filepath.Join(root, "etc/containerd/config.toml")
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	broken := "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"\n"
	if err := os.WriteFile(conf, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", dir)
	if code == ExitOK || !strings.Contains(out+errOut, "is not TOML") || !strings.Contains(out+errOut, "line 2") {
		t.Errorf("apply over broken TOML: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(conf); string(b) != broken {
		t.Errorf("broken file was changed:\n%s", b)
	}
}

// Issue 21: cdi = true keeps the toolkit's CDI specification naming the
// running driver. Apply generates it (nvidia-ctk cdi generate, the
// simulated node's stand-in); after a driver change under it, verify
// fails spec.cdi_spec naming both releases, and apply regenerates it.
func TestCDISpecFollowsTheDriver(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := specDir(t, "  container {\n    runtime = \"containerd\"\n    nvidia_container_toolkit = \"1.14.3\"\n    cdi = true\n  }")
	code, out, errOut := runPA(t, env, "", "plan", dir)
	if code != ExitOK || !strings.Contains(out, "cdi_spec") || !strings.Contains(out, "nvidia-ctk cdi generate") && !strings.Contains(out, "/etc/cdi/nvidia.yaml") {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	root := simRoot(t, state, "hgx-h100-stale")
	spec, err := os.ReadFile(filepath.Join(root, "etc/cdi/nvidia.yaml"))
	if err != nil || !strings.Contains(string(spec), "/libcuda.so.535.183.06") || !strings.Contains(string(spec), "kind: nvidia.com/gpu") {
		t.Fatalf("CDI spec after apply (%v):\n%s", err, spec)
	}
	if code, out, errOut = runPA(t, env, "", "plan", dir); code != ExitOK || strings.Contains(out, "cdi_spec") {
		t.Errorf("plan after apply: exit %d\n%s\n%s", code, out, errOut)
	}
	// The driver changes under the spec (a reboot into 550 after an
	// upgrade gpuform did not make).
	ver := filepath.Join(root, "proc/driver/nvidia/version")
	b, _ := os.ReadFile(ver)
	if err := os.WriteFile(ver, []byte(strings.Replace(string(b), "535.183.06", "550.127.08", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, checks, vout := verifyJSON(t, env, dir)
	if code != ExitReport || !hasFailed(checks, "spec.cdi_spec") {
		t.Fatalf("verify after the driver changed: exit %d\n%s", code, vout)
	}
	for _, cs := range checks {
		for _, c := range cs {
			if c.ID == "spec.cdi_spec" && (!strings.Contains(c.Observed, "535.183.06") || !strings.Contains(c.Expected, "550.127.08")) {
				t.Errorf("spec.cdi_spec: observed %q expected %q", c.Observed, c.Expected)
			}
		}
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("second apply: exit %d\n%s\n%s", code, out, errOut)
	}
	if spec, _ = os.ReadFile(filepath.Join(root, "etc/cdi/nvidia.yaml")); !strings.Contains(string(spec), "/libcuda.so.550.127.08") || strings.Contains(string(spec), "535.183.06") {
		t.Errorf("CDI spec after the second apply:\n%s", spec)
	}
}
