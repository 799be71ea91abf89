package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProbeTimeout blocks the probe on a FIFO where sysfs has a PCI
// device's class file (what a wedged driver does to a read on a real
// node): plan and facts must give up after the probe timeout, set by flag
// or by the inventory, with a message naming the host and the limit.
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
	classes, _ := filepath.Glob(filepath.Join(root, "sys/bus/pci/devices/*/class"))
	if len(classes) == 0 {
		t.Fatal("the simulated root has no PCI devices")
	}
	os.Remove(classes[0])
	if err := syscall.Mkfifo(classes[0], 0o644); err != nil {
		t.Fatal(err)
	}
	want := host + ": timeout: the probe did not finish within 2s and was stopped (raise it with -probe-timeout or the inventory's probe_timeout)"
	tests := map[string]struct {
		args []string
		want string
	}{
		"plan -probe-timeout":       {args: []string{"plan", "-probe-timeout", "2s", plain}, want: want},
		"plan, inventory attribute": {args: []string{"plan", write("2s")}, want: want},
		"facts -probe-timeout":      {args: []string{"facts", "-probe-timeout", "2s", plain}, want: want},
		"facts --root":              {args: []string{"facts", "--root", root, "-probe-timeout", "2s"}, want: "timeout: the probe did not finish within 2s"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
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
