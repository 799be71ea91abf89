package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dpkgStanza returns the status file's stanza of a package, or "".
func dpkgStanza(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "var/lib/dpkg/status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range strings.Split(string(b), "\n\n") {
		if strings.HasPrefix(strings.TrimSpace(st), "Package: "+name+"\n") {
			return st
		}
	}
	return ""
}

// enrootPkgSpec is an enroot node whose runtime packages gpuform installs.
func enrootPkgSpec(enroot, pyxis string) string {
	return "  container {\n    runtime = \"enroot\"\n    enroot_version = \"" + enroot + "\"\n    enroot_caps = true\n    pyxis_version = \"" + pyxis + "\"\n  }"
}

// Issue 21: enroot, enroot+caps and pyxis installed through the CLI on a
// node whose repository (a site mirror) offers them: plan shows the
// installs and the plugstack line naming where the package puts pyxis,
// apply installs them pinned and held and restarts the running slurmd,
// the next plan is empty and verify passes. A new release in the spec is a
// change, and a package moved behind gpuform's back fails verify.
func TestEnrootPyxisPackagesPlanApplyVerify(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := specDir(t, enrootPkgSpec("4.1.1", "0.24.0"))
	code, out, errOut := runPA(t, env, "", "plan", dir)
	if code != ExitOK {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"enroot_package", "enroot+caps 4.1.1", "pyxis_package", "nvslurm-plugin-pyxis", "required /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	// slurmd runs: pyxis's plugin is loaded by restarting it.
	root := simRoot(t, state, "hgx-h100-stale")
	unit := filepath.Join(root, "lib/systemd/system/slurmd.service")
	writeFile(t, unit, "[Service]\nExecStart=/usr/sbin/slurmd -D\n")
	if err := os.MkdirAll(filepath.Join(root, "run/systemd/units"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("1", filepath.Join(root, "run/systemd/units/invocation:slurmd.service")); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	// Planned with the restart, and restarted: slurmd was not among the
	// units the probe read, so neither pyxis change restarted it.
	if !strings.Contains(out, "restarts slurmd.service") {
		t.Errorf("the plan apply showed does not restart slurmd:\n%s", out)
	}
	calls, _ := os.ReadFile(filepath.Join(root, "var/log/gpuform-sim/calls.log"))
	if !strings.Contains(string(calls), "systemctl try-restart slurmd.service") {
		t.Errorf("apply did not restart slurmd after installing pyxis:\n%s", calls)
	}
	for name, version := range map[string]string{"enroot": "4.1.1-1", "enroot+caps": "4.1.1-1", "nvslurm-plugin-pyxis": "0.24.0-1"} {
		st := dpkgStanza(t, root, name)
		if !strings.Contains(st, "Version: "+version+"\n") || !strings.Contains(st, "Status: hold ok installed") {
			t.Errorf("%s after apply, want %s held:\n%s", name, version, st)
		}
	}
	holds, _ := os.ReadFile(filepath.Join(root, "var/lib/gpuform/apt-holds"))
	for _, name := range []string{"enroot", "enroot+caps", "nvslurm-plugin-pyxis"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `$`).Match(holds) {
			t.Errorf("apt-holds does not record %s as gpuform's:\n%s", name, holds)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/slurm/plugstack.conf.d/pyxis.conf")); err != nil || !strings.HasSuffix(string(b), "\nrequired /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so\n") {
		t.Errorf("pyxis.conf after apply (%v):\n%s", err, b)
	}
	if code, out, errOut = runPA(t, env, "", "plan", "-detailed-exitcode", dir); code != ExitOK {
		t.Fatalf("plan after apply is not empty: exit %d\n%s\n%s", code, out, errOut)
	}
	code, checks, vout := verifyJSON(t, env, dir)
	for _, id := range []string{"spec.enroot_package", "spec.pyxis_package", "spec.pyxis_plugstack"} {
		if hasFailed(checks, id) {
			t.Errorf("verify after apply fails %s (exit %d)\n%s", id, code, vout)
		}
	}

	// A hold lifted behind gpuform's back is put back without restarting
	// slurmd: nothing it loads changed.
	status := filepath.Join(root, "var/lib/dpkg/status")
	b, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	pyxis := dpkgStanza(t, root, "nvslurm-plugin-pyxis")
	writeFile(t, status, strings.Replace(string(b), pyxis, strings.Replace(pyxis, "Status: hold ok installed", "Status: install ok installed", 1), 1))
	code, out, errOut = runPA(t, env, "", "plan", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(out, "pyxis_package") || strings.Contains(out, "restarts slurmd") {
		t.Errorf("plan of a lifted hold: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply of a lifted hold: exit %d\n%s\n%s", code, out, errOut)
	}
	restarts := func() int {
		calls, _ := os.ReadFile(filepath.Join(root, "var/log/gpuform-sim/calls.log"))
		return strings.Count(string(calls), "systemctl try-restart slurmd.service")
	}
	if n := restarts(); n != 1 {
		t.Errorf("slurmd restarted %d times, want once for the first apply (pyxis installed and its line written) and none for the hold", n)
	}

	// Another pyxis release under the same line: the package's change
	// restarts slurmd.
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"sim://hgx-h100-stale\"]\n"+enrootPkgSpec("4.1.1", "0.23.0")+"\n}\n")
	code, out, errOut = runPA(t, env, "", "plan", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(out, "restarts slurmd.service") || strings.Contains(out, "pyxis_plugstack") {
		t.Errorf("plan of pyxis 0.23.0: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK || restarts() != 2 {
		t.Fatalf("apply of pyxis 0.23.0: exit %d, %d restarts\n%s\n%s", code, restarts(), out, errOut)
	}

	// A new enroot release in the spec: both packages move together.
	dir2 := dir
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"sim://hgx-h100-stale\"]\n"+enrootPkgSpec("4.1.2", "0.23.0")+"\n}\n")
	code, out, errOut = runPA(t, env, "", "plan", "-detailed-exitcode", dir2)
	if code != ExitReport || !strings.Contains(out, `"4.1.1" -> "4.1.2"`) || !strings.Contains(out, "enroot+caps 4.1.2") || strings.Contains(out, "pyxis_package") {
		t.Fatalf("plan of enroot 4.1.2: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir2); code != ExitOK {
		t.Fatalf("apply of enroot 4.1.2: exit %d\n%s\n%s", code, out, errOut)
	}
	if st := dpkgStanza(t, root, "enroot+caps"); !strings.Contains(st, "Version: 4.1.2-1\n") || !strings.Contains(st, "Status: hold") {
		t.Errorf("enroot+caps after the upgrade:\n%s", st)
	}

	// Someone downgrades enroot by hand: verify names it.
	b, err = os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.Replace(string(b), dpkgStanza(t, root, "enroot"), strings.Replace(dpkgStanza(t, root, "enroot"), "Version: 4.1.2-1", "Version: 4.1.1-1", 1), 1)
	if err := os.WriteFile(status, []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	code, checks, vout = verifyJSON(t, env, dir2)
	if code != ExitReport || !hasFailed(checks, "spec.enroot_package") {
		t.Errorf("verify with enroot 4.1.1 installed and 4.1.2 pinned: exit %d\n%s", code, vout)
	}
}

// enroot and pyxis are not in NVIDIA's repositories: a release the node's
// repositories do not offer fails the apply saying where it comes from,
// naming NVIDIA's release files for the node's architecture (enroot) or
// how pyxis is built, not apt's bare "version not found".
func TestRuntimePackageNotOffered(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ host, body, want string }{
		"enroot": {"hgx-h100-stale", "  container {\n    runtime = \"enroot\"\n    enroot_version = \"4.0.1\"\n    enroot_caps = true\n  }",
			"https://github.com/NVIDIA/enroot/releases/download/v4.0.1/enroot_4.0.1-1_amd64.deb and https://github.com/NVIDIA/enroot/releases/download/v4.0.1/enroot+caps_4.0.1-1_amd64.deb in a repository this node uses"},
		"enroot rpm": {"l40s-rocky9", "  container {\n    runtime = \"enroot\"\n    enroot_version = \"4.0.1\"\n  }",
			"put https://github.com/NVIDIA/enroot/releases/download/v4.0.1/enroot-4.0.1-1.el8.x86_64.rpm in a repository this node uses"},
		"pyxis": {"hgx-h100-stale", "  container {\n    runtime = \"enroot\"\n    enroot_version = \"4.1.2\"\n    pyxis_version = \"0.22.0\"\n  }",
			"NVIDIA publishes pyxis as source only"},
		"apptainer": {"hgx-h100-stale", "  container {\n    runtime = \"apptainer\"\n    apptainer_version = \"1.3.4\"\n  }",
			"https://github.com/apptainer/apptainer/releases/tag/v1.3.4"},
	} {
		t.Run(name, func(t *testing.T) {
			env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"sim://"+tc.host+"\"]\n"+tc.body+"\n}\n")
			code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", dir)
			if code == ExitOK || !strings.Contains(strings.Join(strings.Fields(out+errOut), " "), tc.want) {
				t.Errorf("apply: exit %d, want %q\n%s\n%s", code, tc.want, out, errOut)
			}
		})
	}
}

// enroot_caps = false takes enroot+caps (and the capabilities it grants)
// away in the same transaction; enroot stays.
func TestEnrootCapsRemoved(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	body := "  container {\n    runtime = \"enroot\"\n    enroot_version = \"4.1.2\"\n    enroot_caps = %s\n  }"
	dir := specDir(t, strings.Replace(body, "%s", "true", 1))
	if code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	root := simRoot(t, state, "hgx-h100-stale")
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"sim://hgx-h100-stale\"]\n"+strings.Replace(body, "%s", "false", 1)+"\n}\n")
	code, out, errOut := runPA(t, env, "", "plan", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(out, `- package enroot+caps = "4.1.2" -> null`) {
		t.Fatalf("plan with enroot_caps = false: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply with enroot_caps = false: exit %d\n%s\n%s", code, out, errOut)
	}
	if st := dpkgStanza(t, root, "enroot+caps"); st != "" {
		t.Errorf("enroot+caps still installed:\n%s", st)
	}
	if st := dpkgStanza(t, root, "enroot"); !strings.Contains(st, "Version: 4.1.2-1\n") || !strings.Contains(st, "Status: hold") {
		t.Errorf("enroot after removing enroot+caps:\n%s", st)
	}
	if code, out, errOut = runPA(t, env, "", "plan", "-detailed-exitcode", dir); code != ExitOK {
		t.Errorf("plan after apply: exit %d\n%s\n%s", code, out, errOut)
	}
}

// Apptainer is a runtime of its own: apptainer_version installs and holds
// it, and the next plan is empty.
func TestApptainerPackage(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := specDir(t, "  container {\n    runtime = \"apptainer\"\n    apptainer_version = \"1.4.5\"\n  }")
	if code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK || !strings.Contains(out, "apptainer_package") {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	root := simRoot(t, state, "hgx-h100-stale")
	if st := dpkgStanza(t, root, "apptainer"); !strings.Contains(st, "Version: 1.4.5\n") || !strings.Contains(st, "Status: hold") {
		t.Errorf("apptainer after apply:\n%s", st)
	}
	if code, out, errOut := runPA(t, env, "", "plan", "-detailed-exitcode", dir); code != ExitOK {
		t.Errorf("plan after apply: exit %d\n%s\n%s", code, out, errOut)
	}
}

// On the RHEL family the packages come through dnf, locked with
// versionlock, and the plugstack line names the rpm's %{_libdir}.
func TestEnrootPyxisPackagesRHEL(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"sim://l40s-rocky9\"]\n"+enrootPkgSpec("4.1.2", "0.24.0")+"\n}\n")
	if code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	root := simRoot(t, state, "l40s-rocky9")
	locks, _ := os.ReadFile(filepath.Join(root, "etc/dnf/plugins/versionlock.list"))
	for _, l := range []string{"enroot-0:4.1.2-1.el8.*", "enroot+caps-0:4.1.2-1.el8.*", "nvslurm-plugin-pyxis-0:0.24.0-1.sl2411.el9.*"} {
		if !strings.Contains(string(locks), l+"\n") {
			t.Errorf("versionlock.list lacks %s:\n%s", l, locks)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/slurm/plugstack.conf.d/pyxis.conf")); err != nil || !strings.HasSuffix(string(b), "\nrequired /usr/lib64/slurm/spank_pyxis.so\n") {
		t.Errorf("pyxis.conf after apply (%v):\n%s", err, b)
	}
	if code, out, errOut := runPA(t, env, "", "plan", "-detailed-exitcode", dir); code != ExitOK {
		t.Errorf("plan after apply: exit %d\n%s\n%s", code, out, errOut)
	}
}

// A floating enroot series is locked like the driver: lock records the
// release installed, lock -upgrade the newest the repository offers, and
// the next plan installs it.
func TestLockEnrootSeries(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := specDir(t, "  container {\n    runtime = \"enroot\"\n    enroot_version = \"4.1.1\"\n  }")
	if code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply of 4.1.1: exit %d\n%s\n%s", code, out, errOut)
	}
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"sim://hgx-h100-stale\"]\n  container {\n    runtime = \"enroot\"\n    enroot_version = \"4.1\"\n  }\n}\n")
	if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK || !strings.Contains(lockFile(t, dir), `"4.1.1"`) {
		t.Fatalf("lock: exit %d\n%s\n%s\n%s", code, out, errOut, lockFile(t, dir))
	}
	code, out, errOut := runCLIEnv(t, env, "lock", "-upgrade", dir)
	if code != ExitOK || !strings.Contains(out, `~ node "n" enroot: 4.1.1 -> 4.1.2`) || !strings.Contains(lockFile(t, dir), `"4.1.2"`) {
		t.Fatalf("lock -upgrade: exit %d\n%s\n%s\n%s", code, out, errOut, lockFile(t, dir))
	}
	code, out, errOut = runCLIEnv(t, env, "plan", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(out, `"4.1.1" -> "4.1.2"`) {
		t.Fatalf("plan after lock -upgrade: exit %d\n%s\n%s", code, out, errOut)
	}
}

// Each package belongs to its runtime, and pyxis_version is pyxis loaded.
func TestRuntimePackageSettingsValidated(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"enroot on docker":    {"  container {\n    runtime = \"docker\"\n    enroot_version = \"4.1.2\"\n  }", "Setting of another runtime"},
		"apptainer on enroot": {"  container {\n    runtime = \"enroot\"\n    apptainer_version = \"1.4.5\"\n  }", "Setting of another runtime"},
		"pyxis off":           {"  container {\n    runtime = \"enroot\"\n    pyxis = false\n    pyxis_version = \"0.24.0\"\n  }", "pyxis_version with pyxis = false"},
		"caps alone":          {"  container {\n    runtime = \"enroot\"\n    enroot_caps = true\n  }", "enroot_caps without enroot_version"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runPA(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "", "validate", specDir(t, tc.body))
			if code == ExitOK || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("validate: exit %d, want %q\n%s%s", code, tc.want, out, errOut)
			}
		})
	}
}

// runtime = "apptainer" runs no Docker: the toolkit and Docker's container
// defaults do not write daemon.json; the defaults are a plan warning, as
// on enroot (Apptainer binds the host's /dev/shm).
func TestApptainerWritesNoDaemonJSON(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := specDir(t, "  container {\n    runtime = \"apptainer\"\n    nvidia_container_toolkit = \"1.17.8\"\n    default_shm_size = \"16GiB\"\n    apptainer_version = \"1.4.5\"\n  }")
	code, out, errOut := runPA(t, env, "", "plan", dir)
	if code != ExitOK || strings.Contains(out, "docker_daemon") || !strings.Contains(out+errOut, "container runtime apptainer: default_shm_size is a Docker daemon setting") {
		t.Errorf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
}
