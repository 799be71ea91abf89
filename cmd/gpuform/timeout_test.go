package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProbeTimeout blocks the probe in a command that never returns (the
// rpm query, made to hang through the stand-in's sleep hook: what a wedged
// driver does to a read of /proc/driver/nvidia on a real node; the probe
// no longer opens FIFOs, so one in sysfs cannot stand in for it): plan and
// facts must give up after the probe timeout, set by flag or by the
// inventory, with a message naming the host and the limit.
func TestProbeTimeout(t *testing.T) {
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	const host = "sim://hgx-h100-stale"
	write := func(probeTimeout string) string {
		dir := t.TempDir()
		attr := ""
		if probeTimeout != "" {
			attr = "  probe_timeout = \"" + probeTimeout + "\"\n"
		}
		src := "inventory \"sim\" {\n  hosts = [\"" + host + "\"]\n" + attr + "}\n\nnode \"n\" {\n  hosts = inventory.sim\n}\n"
		if err := os.WriteFile(filepath.Join(dir, "main.gpuform.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	plain := write("")
	// The first plan materialises the simulated root.
	if code, out, errOut := runPA(t, env, "", "plan", plain); code != ExitOK {
		t.Fatalf("plan before the FIFO: exit %d\n%s\n%s", code, out, errOut)
	}
	root := filepath.Join(state, "hgx-h100-stale")
	hangProbe(t, root)
	want := host + ": timeout: the probe did not finish within 2s and was stopped (raise it with -probe-timeout or the inventory's probe_timeout)"
	tests := map[string]struct {
		args []string
		want string
	}{
		"plan -probe-timeout":       {args: []string{"plan", "-probe-timeout", "2s", plain}, want: want},
		"plan, inventory attribute": {args: []string{"plan", write("2s")}, want: want},
		// facts prints the error once, in its listing under the host.
		"facts -probe-timeout": {args: []string{"facts", "-probe-timeout", "2s", plain}, want: host + "\n  error: timeout: the probe did not finish within 2s and was stopped (raise it with -probe-timeout or the inventory's probe_timeout)"},
		"facts --root":         {args: []string{"facts", "--root", root, "-probe-timeout", "2s"}, want: "timeout: the probe did not finish within 2s"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.args[1] == "--root" {
				// Under --root the probe runs the rpm found on this
				// machine's PATH: put the hanging stand-in first.
				t.Setenv("PATH", filepath.Join(root, "usr/lib/gpuform-sim/bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
			}
			start := time.Now()
			code, out, errOut := runPA(t, env, "", tc.args...)
			took := time.Since(start)
			if code == ExitOK || code == ExitReport || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, want 1 and %q\nstdout:\n%s\nstderr:\n%s", code, tc.want, out, errOut)
			}
			if took > 30*time.Second {
				t.Errorf("took %s with a 2s probe timeout", took)
			}
		})
	}
}

// TestTimeoutSettingsAreChecked: a timeout that is no duration is refused
// before any host is reached, on the command line and in the spec.
func TestTimeoutSettingsAreChecked(t *testing.T) {
	dir := t.TempDir()
	src := "inventory \"sim\" {\n  hosts = [\"sim://hgx-h100-stale\"]\n  probe_timeout = \"soon\"\n}\n\nnode \"n\" {\n  hosts = inventory.sim\n  rollout {\n    step_timeout = \"0s\"\n  }\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.gpuform.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runPA(t, nil, "", "validate", dir)
	if code != ExitFailed || !strings.Contains(out+errOut, "Invalid probe_timeout") || !strings.Contains(out+errOut, "Invalid step_timeout") {
		t.Errorf("validate: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = runPA(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "", "apply", "-step-timeout", "-1m", "-auto-approve", "testdata/planapply")
	if code != ExitFailed || !strings.Contains(errOut, "-step-timeout") {
		t.Errorf("apply -step-timeout -1m: exit %d\n%s", code, errOut)
	}
}

// TestStepTimeout: an apt-get that hangs is stopped after the step timeout
// (flag or rollout { step_timeout }), the host fails with a message naming
// it, the step and the limit, and the next apply is not blocked by it.
func TestStepTimeout(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("testdata/planapply/node.gpuform.hcl")
	if err != nil {
		t.Fatal(err)
	}
	specDir := t.TempDir()
	withTimeout := strings.Replace(string(src), "max_failures = 1\n", "max_failures = 1\n    step_timeout = \"2s\"\n", 1)
	if err := os.WriteFile(filepath.Join(specDir, "node.gpuform.hcl"), []byte(withTimeout), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		args    []string
		setting string
	}{
		"flag":                     {args: []string{"apply", "-auto-approve", "-step-timeout", "2s", "testdata/planapply"}},
		"rollout { step_timeout }": {args: []string{"apply", "-auto-approve", specDir}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			state := t.TempDir()
			env := []string{"GPUFORM_SIM_STATE=" + state}
			if code, out, errOut := runPA(t, env, "", "plan", "testdata/planapply"); code != ExitOK {
				t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
			}
			sleep := filepath.Join(state, "hgx-h100-stale/var/lib/gpuform-sim/sleep/apt-get")
			os.MkdirAll(filepath.Dir(sleep), 0o755)
			if err := os.WriteFile(sleep, []byte("120\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			code, out, errOut := runPA(t, env, "", tc.args...)
			took := time.Since(start)
			want := "failed: sim://hgx-h100-stale: timeout: the step did not finish within 2s and was stopped (raise it with -step-timeout or rollout { step_timeout })"
			if code != ExitFailed || !strings.Contains(out, want) || !strings.Contains(out, "step 1/") {
				t.Fatalf("apply with a hung apt-get: exit %d, want 1 and %q\n%s\n%s", code, want, out, errOut)
			}
			if took > 60*time.Second {
				t.Errorf("apply took %s with a 2s step timeout", took)
			}
			// The hung step was stopped: its lock is free and the host
			// converges once apt-get answers again.
			os.Remove(sleep)
			if code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", "testdata/planapply"); code != ExitOK {
				t.Errorf("apply after the timeout: exit %d\n%s\n%s", code, out, errOut)
			}
		})
	}
}

// hangProbe makes every later probe of the simulated root hang: an rpm
// database makes the probe ask rpm for packages, and the rpm stand-in then
// sleeps far past any timeout (its sleep hook). This stands in for a read
// that never returns on a real node (a wedged /proc/driver/nvidia).
func hangProbe(t *testing.T, root string) {
	t.Helper()
	for _, d := range []string{"var/lib/rpm", "var/lib/gpuform-sim/sleep"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/gpuform-sim/sleep/rpm"), []byte("600\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
