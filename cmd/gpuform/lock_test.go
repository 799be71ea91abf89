package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyQuickstart copies the quickstart example with its driver version
// replaced, into a fresh directory.
func copyQuickstart(t *testing.T, driver string) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/quickstart/main.gpuform.hcl")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), "version          = module.stack.driver_version", "version          = \""+driver+"\"", 1)
	if s == string(src) {
		t.Fatal("quickstart no longer takes the driver from the stack module")
	}
	// Locking an image asks its registry (nvcr.io); these tests are about
	// versions and run offline. images_test.go locks images against a
	// registry of its own.
	s = strings.Replace(s, "    images = [module.stack.pytorch_image]\n", "", 1)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), s)
	return dir
}

func TestLockResolvesFloatingVersionsFromHosts(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}

	// The stale node runs 535: a "580" cannot be locked before apply.
	dir := copyQuickstart(t, "580")
	code, _, errOut := runCLIEnv(t, env, "lock", dir)
	if code != ExitFailed || !strings.Contains(errOut, "Cannot lock a floating version") || !strings.Contains(errOut, "line 27") {
		t.Fatalf("lock before apply: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, ".gpuform.lock.hcl")); err == nil {
		t.Fatal("a failed lock wrote the lock file")
	}

	// "535" is the branch the node runs: lock records its exact release.
	dir = copyQuickstart(t, "535")
	code, out, errOut := runCLIEnv(t, env, "lock", dir)
	if code != ExitOK {
		t.Fatalf("lock: exit %d\n%s%s", code, out, errOut)
	}
	lock, err := os.ReadFile(filepath.Join(dir, ".gpuform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`driver                   = "535.183.06"`, `fabric_manager           = "535.183.06"`, `cuda                     = "12.8.1"`} {
		if !strings.Contains(string(lock), want) {
			t.Errorf("lock file lacks %s:\n%s", want, lock)
		}
	}
	if !strings.Contains(out, `+ node "quickstart" driver: 535.183.06`) {
		t.Errorf("lock output:\n%s", out)
	}
	if code, out, _ := runCLIEnv(t, env, "lock", "-check", dir); code != ExitOK || !strings.Contains(out, "up to date") {
		t.Errorf("lock -check: exit %d\n%s", code, out)
	}

	// The spec moves to another branch: plan refuses the stale lock file.
	src, _ := os.ReadFile(filepath.Join(dir, "main.gpuform.hcl"))
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), strings.Replace(string(src), `"535"`, `"580"`, 1))
	if code, _, errOut := runCLIEnv(t, env, "plan", dir); code != ExitFailed || !strings.Contains(errOut, "Lock file is out of date") {
		t.Errorf("plan with a stale lock: exit %d\n%s", code, errOut)
	}
	if code, out, _ := runCLIEnv(t, env, "lock", "-check", dir); code != ExitFailed {
		t.Errorf("lock -check after the spec moved: exit %d\n%s", code, out)
	}
}

// TestLockBrokenLockFile checks that lock says so when the lock file it is
// about to replace does not parse, with and without -check.
func TestLockBrokenLockFile(t *testing.T) {
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := copyQuickstart(t, "580.95.05")
	path := filepath.Join(dir, ".gpuform.lock.hcl")
	for _, c := range []struct {
		args     []string
		wantCode int
	}{
		{[]string{"lock", "-check", dir}, ExitReport},
		{[]string{"lock", dir}, ExitOK},
	} {
		writeFile(t, path, "node \"quickstart\" {\n")
		code, _, errOut := runCLIEnv(t, env, c.args...)
		if code != c.wantCode || !strings.Contains(errOut, "is not a valid lock file") {
			t.Errorf("%v: exit %d, want %d with a warning; stderr:\n%s", c.args, code, c.wantCode, errOut)
		}
	}
	if code, out, _ := runCLIEnv(t, env, "lock", "-check", dir); code != ExitOK || !strings.Contains(out, "up to date") {
		t.Errorf("after lock: exit %d\n%s", code, out)
	}
}

// TestLockFileLinkOutsideSpecDir: a pull request that commits
// .gpuform.lock.hcl as a link to a file outside the spec directory (an
// authorized_keys, a shell rc file) got that file overwritten by the
// `gpuform lock` CI ran. A link that stays inside the spec directory (or
// its repository) is still written through.
func TestLockFileLinkOutsideSpecDir(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := copyQuickstart(t, "535")
	victim := filepath.Join(t.TempDir(), "authorized_keys")
	writeFile(t, victim, "ssh-ed25519 AAAA operator\n")
	lock := filepath.Join(dir, ".gpuform.lock.hcl")
	if err := os.Symlink(victim, lock); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLIEnv(t, env, "lock", dir)
	if code != ExitFailed || !strings.Contains(errOut, "outside its directory") {
		t.Errorf("lock through a link out of the spec: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(victim); string(b) != "ssh-ed25519 AAAA operator\n" {
		t.Errorf("the file the link leads to was rewritten:\n%s", b)
	}

	// Inside the spec directory the link is followed and stays a link.
	os.Remove(lock)
	if err := os.Mkdir(filepath.Join(dir, "locks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("locks", "pins.hcl"), lock); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "locks", "pins.hcl"), "")
	if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK {
		t.Fatalf("lock through a link inside the spec: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "locks", "pins.hcl")); !strings.Contains(string(b), `driver                   = "535.183.06"`) {
		t.Errorf("the lock was not written through the link:\n%s", b)
	}
}
