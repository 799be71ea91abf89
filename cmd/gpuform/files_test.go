package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/sim"
)

// simRoot returns the root gpuform materialised for profile under the sim
// state directory, after a plan made it.
func simRoot(t *testing.T, state, profile string) string {
	t.Helper()
	var root string
	filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == profile {
			if _, err := os.Stat(filepath.Join(p, "etc/fstab")); err == nil {
				root = p
				return filepath.SkipAll
			}
		}
		return nil
	})
	if root == "" {
		t.Fatalf("no root for %s under %s", profile, state)
	}
	return root
}

// specDir writes a one-node spec for sim://hgx-h100-stale.
func specDir(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"sim://hgx-h100-stale\"]\n"+body+"\n}\n")
	return dir
}

// Issue 17 A: an fstab with a NUL byte on the /data line lost every line
// but the shm one (grep -v saw a binary file). Every line stays, byte for
// byte, whatever the locale.
func TestApplyKeepsEveryFstabLine(t *testing.T) {
	t.Setenv("LC_ALL", "C")
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := specDir(t, `  shm { size = "50%" }`)
	if code, _, errOut := runPA(t, env, "", "plan", dir); code != ExitOK {
		t.Fatalf("plan: exit %d\n%s", code, errOut)
	}
	fstab := filepath.Join(simRoot(t, state, "hgx-h100-stale"), "etc/fstab")
	orig, err := os.ReadFile(fstab)
	if err != nil {
		t.Fatal(err)
	}
	withNUL := string(orig) + "/dev/sdc1 /data xfs defaults,nofail 0 2\x00\n# caf\xe9 \xff\n"
	writeFile(t, fstab, withNUL)

	code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", dir)
	if code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	got, err := os.ReadFile(fstab)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(got), "\n") {
		lines[l] = true
	}
	for _, l := range strings.Split(strings.TrimSuffix(withNUL, "\n"), "\n") {
		if !strings.Contains(l, "/dev/shm") && !lines[l] {
			t.Errorf("line %q is gone; fstab is now:\n%q", l, got)
		}
	}
	if !lines["tmpfs /dev/shm tmpfs defaults,nosuid,nodev,size=50% 0 0"] {
		t.Errorf("no shm line in:\n%q", got)
	}
}

// Issue 17 C: every rewrite ended in chmod 0644, so a 0600 fstab holding a
// CIFS password= and a 0600 daemon.json became world-readable.
func TestApplyKeepsFileModes(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := specDir(t, "  shm { size = \"50%\" }\n  container {\n    runtime = \"docker\"\n    default_shm_size = \"16GiB\"\n  }")
	if code, _, errOut := runPA(t, env, "", "plan", dir); code != ExitOK {
		t.Fatalf("plan: exit %d\n%s", code, errOut)
	}
	root := simRoot(t, state, "hgx-h100-stale")
	fstab := filepath.Join(root, "etc/fstab")
	orig, _ := os.ReadFile(fstab)
	writeFile(t, fstab, string(orig)+"//nas/share /mnt/share cifs username=u,password=s3cret 0 0\n")
	daemon := filepath.Join(root, "etc/docker/daemon.json")
	for _, p := range []string{fstab, daemon} {
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", dir)
	if code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, p := range []string{fstab, daemon} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is %v after apply, want 0600", p, fi.Mode().Perm())
		}
	}
	if b, _ := os.ReadFile(fstab); !strings.Contains(string(b), "size=50%") || !strings.Contains(string(b), "password=s3cret") {
		t.Errorf("fstab after apply:\n%s", b)
	}
	if b, _ := os.ReadFile(daemon); !strings.Contains(string(b), `"default-shm-size": "16G"`) {
		t.Errorf("daemon.json after apply:\n%s", b)
	}
}

// Issue 17 D: facts --root followed a relative .. link out of the root and
// printed the controller's /etc/passwd.
func TestFactsRootDoesNotLeaveTheRoot(t *testing.T) {
	t.Parallel()
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil || len(passwd) == 0 {
		t.Skip("no /etc/passwd on this machine")
	}
	first, _, _ := strings.Cut(string(passwd), "\n")
	root, err := sim.Materialize("l40s-rocky9", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	daemon := filepath.Join(root, "etc/docker/daemon.json")
	os.Remove(daemon)
	if err := os.MkdirAll(filepath.Dir(daemon), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../../../../../../../../../etc/passwd", daemon); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLIEnv(t, nil, "facts", "--root", root, "-json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, first) || strings.Contains(out, "root:x:0") {
		t.Fatalf("facts --root printed the controller's /etc/passwd:\n%s", out)
	}
	var doc facts.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	f := doc.Hosts[0].Facts
	if f == nil {
		t.Fatalf("no facts: %+v", doc.Hosts[0])
	}
	if cf := f.ConfigFiles["/etc/docker/daemon.json"]; f.Docker.Present || cf.Exists || cf.Resolved != "/etc/passwd" {
		t.Errorf("daemon.json should read as missing, resolved inside the root: %+v", cf)
	}
}

// A mistyped sysctl key is refused at plan, by name.
func TestPlanRefusesUnknownSysctl(t *testing.T) {
	t.Parallel()
	dir := specDir(t, `  sysctl = { "vm.swapiness" = "10" }`)
	code, out, errOut := runPA(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "", "plan", dir)
	if code == ExitOK || !strings.Contains(out+errOut, "sysctl vm.swapiness does not exist on this node") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
}
