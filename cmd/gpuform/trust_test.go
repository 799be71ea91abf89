package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/sim"
)

// plantWitnesses replaces every stand-in of a simulated root with a script
// that creates a witness file, and returns the witness's path: a test that
// finds the witness knows gpuform ran a program from that root.
func plantWitnesses(t *testing.T, root string) string {
	t.Helper()
	witness := filepath.Join(t.TempDir(), "witness")
	bin := filepath.Join(root, filepath.FromSlash(sim.BinDir))
	names := []string{"grep", "sed", "awk", "cat", "ls", "readlink", "find", "head", "tail", "tr", "sort", "cut", "wc", "uname", "od", "dpkg-query", "rpm", "systemctl", "sysctl", "nvidia-smi", "apt-get"}
	entries, err := os.ReadDir(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for _, n := range names {
		writeFile(t, filepath.Join(bin, n), "#!/bin/sh\ntouch "+witness+"\nexit 1\n")
		if err := os.Chmod(filepath.Join(bin, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return witness
}

func noWitness(t *testing.T, witness string) {
	t.Helper()
	if _, err := os.Stat(witness); err == nil {
		t.Errorf("gpuform ran a program it did not make (%s exists)", witness)
	}
}

// A spec directory that brings its own simulated node — a pull request
// committing .gpuform/sim/PROFILE with its stand-ins, complete with
// gpuform's marker — gets none of it run by plan: simulated state lives in
// the per-user state directory, and GPUFORM_SIM_STATE may not point into
// the spec.
func TestPlanNeverRunsSimStateFromSpecDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"sim://hgx-h100-stale\"]\n}\n")
	planted, err := sim.Materialize("hgx-h100-stale", filepath.Join(dir, ".gpuform", "sim"))
	if err != nil {
		t.Fatal(err)
	}
	// What older gpuform releases took as a materialised root.
	writeFile(t, filepath.Join(planted, "var/lib/gpuform-sim/profile"), "hgx-h100-stale\n")
	witness := plantWitnesses(t, planted)

	home := t.TempDir()
	code, out, errOut := runCLIEnv(t, []string{"HOME=" + home}, "plan", dir)
	if code != ExitOK {
		t.Errorf("plan with the default state directory: exit %d\n%s%s", code, out, errOut)
	}
	noWitness(t, witness)
	markers, _ := filepath.Glob(filepath.Join(home, ".local/state/gpuform/sim/*/hgx-h100-stale", sim.MarkerFile))
	if len(markers) != 1 {
		t.Errorf("want the node materialised under ~/.local/state/gpuform/sim/SPEC-HASH/, found markers %v", markers)
	}

	code, out, errOut = runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + filepath.Join(dir, ".gpuform", "sim")}, "plan", dir)
	if code != ExitFailed || !strings.Contains(out+errOut, "inside the spec directory") {
		t.Errorf("GPUFORM_SIM_STATE inside the spec: exit %d\n%s%s", code, out, errOut)
	}
	noWitness(t, witness)
}

// TestSimStateThroughALinkToTheSpecDir: GPUFORM_SIM_STATE naming a
// directory not made yet, through a link to the spec directory, is inside
// the spec as well. The first plan used to make it there, and a spec could
// then ship the state the next plan runs.
func TestSimStateThroughALinkToTheSpecDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"sim://hgx-h100-stale\"]\n}\n")
	link := filepath.Join(t.TempDir(), "checkout")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + filepath.Join(link, "state", "sim")}, "plan", dir)
	if code != ExitFailed || !strings.Contains(out+errOut, "inside the spec directory") {
		t.Errorf("GPUFORM_SIM_STATE through a link into the spec: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "state")); err == nil {
		t.Error("simulated state was made inside the spec directory")
	}
}

// A simulated root that gpuform did not make, or that is not where gpuform
// put it, is refused with a clear error and nothing in it runs.
func TestPlanRefusesSimStateGpuformDidNotMake(t *testing.T) {
	t.Parallel()
	tests := map[string]func(t *testing.T, root string){
		"marker missing": func(t *testing.T, root string) {
			if err := os.Remove(filepath.Join(root, sim.MarkerFile)); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			// What older gpuform releases took as a materialised root.
			writeFile(t, filepath.Join(root, "var/lib/gpuform-sim/profile"), "hgx-h100-stale\n")
		},
		"root is a symlink": func(t *testing.T, root string) {
			elsewhere := filepath.Join(t.TempDir(), "root")
			if err := os.Rename(root, elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, root); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, damage := range tests {
		t.Run(name, func(t *testing.T) {
			state := t.TempDir()
			env := []string{"GPUFORM_SIM_STATE=" + state}
			dir := "testdata/planapply"
			if code, out, errOut := runCLIEnv(t, env, "plan", dir); code != ExitOK {
				t.Fatalf("first plan: exit %d\n%s%s", code, out, errOut)
			}
			root := filepath.Join(state, "hgx-h100-stale")
			witness := plantWitnesses(t, root)
			damage(t, root)
			code, out, errOut := runCLIEnv(t, env, "plan", dir)
			if code != ExitFailed || !strings.Contains(out+errOut, "refusing simulated node state") {
				t.Errorf("exit %d, want 1 and a refusal\n%s%s", code, out, errOut)
			}
			noWitness(t, witness)
		})
	}
}

// Every command that runs commands on hosts refuses a local:// host
// without -allow-local, before it runs anything; with it, it runs.
func TestLocalHostsNeedAllowLocal(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"self\" {\n  hosts = [\"local://ci-runner\"]\n  driver {\n    version = \"580\"\n  }\n}\n")
	tests := map[string][]string{
		"plan":   {"plan", dir},
		"facts":  {"facts", dir},
		"lock":   {"lock", dir},
		"import": {"import", "local://ci-runner"},
		"verify": {"verify", dir},
		"apply":  {"apply", "-auto-approve", dir},
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, args...)
			if code != ExitFailed || !strings.Contains(errOut, "host local://ci-runner is this machine") || !strings.Contains(errOut, "pass -allow-local") {
				t.Errorf("exit %d, want 1 and a refusal asking for -allow-local\n%s%s", code, out, errOut)
			}
		})
	}
	code, out, errOut := runCLIEnv(t, nil, "facts", "-allow-local", dir)
	if code != ExitOK || !strings.Contains(out, "local://ci-runner") || !strings.Contains(out, "kernel") {
		t.Errorf("facts -allow-local: exit %d\n%s%s", code, out, errOut)
	}
}

// verify -tier full runs a spec's nccl_test commands; on a sim:// or
// local:// host they would run on this machine, so that needs -allow-local.
func TestVerifyNCCLOnThisMachineNeedsAllowLocal(t *testing.T) {
	t.Parallel()
	spec := func(host, witness string) string {
		return "node \"n\" {\n  hosts = [\"" + host + "\"]\n  verify {\n    nccl_test \"witness\" {\n      command = \"touch " + witness + "\"\n    }\n  }\n}\n"
	}
	for _, host := range []string{"sim://dgx-a100", "local://ci-runner"} {
		t.Run(host, func(t *testing.T) {
			dir := t.TempDir()
			witness := filepath.Join(t.TempDir(), "witness")
			writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), spec(host, witness))
			env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
			code, out, errOut := runCLIEnv(t, env, "verify", "-tier", "full", dir)
			if code != ExitFailed || !strings.Contains(errOut, "host "+host+" is this machine") || !strings.Contains(errOut, "pass -allow-local") {
				t.Errorf("exit %d, want 1 and a refusal asking for -allow-local\n%s%s", code, out, errOut)
			}
			if _, err := os.Stat(witness); err == nil {
				t.Error("the nccl_test command ran without -allow-local")
			}
			if host != "sim://dgx-a100" {
				return
			}
			// The probe tier runs no nccl-tests: nothing to allow.
			if code, out, errOut := runCLIEnv(t, env, "verify", dir); strings.Contains(errOut, "allow-local") || code == ExitFailed {
				t.Errorf("verify -tier probe: exit %d\n%s%s", code, out, errOut)
			}
			runCLIEnv(t, env, "verify", "-tier", "full", "-allow-local", dir)
			if _, err := os.Stat(witness); err != nil {
				t.Error("verify -tier full -allow-local did not run the nccl_test command")
			}
		})
	}
}

const forged = "\x1b[2K\rOK: all checks passed"

// noForgery fails when output carries a terminal escape or a bare CR, and
// checks that the host's text is still there, escaped.
func noForgery(t *testing.T, output string) {
	t.Helper()
	if strings.ContainsAny(output, "\x1b\r\u009b") {
		t.Errorf("output carries the host's escape sequence or CR:\n%q", output)
	}
	if !strings.Contains(output, `\x1b[2K\rOK: all checks passed`) {
		t.Errorf("output lacks the host's text, escaped:\n%s", output)
	}
}

// Output of a failing step cannot rewrite apply's report.
func TestApplyFailureCannotForgeReportLines(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := "testdata/planapply"
	if code, out, errOut := runCLIEnv(t, env, "plan", dir); code != ExitOK {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	fail := filepath.Join(state, "hgx-h100-stale", "var/lib/gpuform-sim/fail")
	if err := os.MkdirAll(fail, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(fail, "apt-get"), forged+"\n")
	code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir)
	if code != ExitFailed {
		t.Fatalf("apply with a failing apt-get: exit %d\n%s%s", code, out, errOut)
	}
	noForgery(t, out+errOut)
}

// Output of an nccl-tests command cannot rewrite verify's report.
func TestVerifyOutputCannotForgeReportLines(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "fake_perf")
	writeFile(t, script, "#!/bin/sh\nprintf '"+strings.ReplaceAll(strings.ReplaceAll(forged, "\x1b", `\033`), "\r", `\r`)+"\\n' >&2\nexit 127\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"sim://dgx-a100\"]\n  verify {\n    nccl_test \"forge\" {\n      command = \""+script+"\"\n    }\n  }\n}\n")
	code, out, errOut := runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "verify", "-tier", "full", "-allow-local", dir)
	if code != ExitReport {
		t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
	}
	noForgery(t, out+errOut)
}
