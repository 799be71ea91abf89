package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/sim"
)

func driverSpec(t *testing.T, dir, version string, hosts ...string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `node "n" {
  hosts = ["`+strings.Join(hosts, `", "`)+`"]
  driver {
    version       = "`+version+`"
    kernel_module = "proprietary"
  }
}
`)
}

func lockFile(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".gpuform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLockUpgrade: the stale node runs driver 535.183.06 and its package
// repository offers 535.216.01. lock records what runs; lock -upgrade
// moves the lock to the newest release of the branch, and the next plan
// installs it.
func TestLockUpgrade(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := t.TempDir()
	driverSpec(t, dir, "535", "sim://hgx-h100-stale")

	if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK || !strings.Contains(lockFile(t, dir), `"535.183.06"`) {
		t.Fatalf("lock: exit %d\n%s\n%s\n%s", code, out, errOut, lockFile(t, dir))
	}
	code, out, errOut := runCLIEnv(t, env, "lock", "-upgrade", dir)
	if code != ExitOK || !strings.Contains(out, `~ node "n" driver: 535.183.06 -> 535.216.01`) || !strings.Contains(lockFile(t, dir), `"535.216.01"`) {
		t.Fatalf("lock -upgrade: exit %d\n%s\n%s\n%s", code, out, errOut, lockFile(t, dir))
	}
	// issue 30 item 4: -check judges the spec against the lock file, so
	// it passes before any host runs 535.216.01 (it used to re-resolve
	// from the hosts and report the lock as changing back).
	if code, out, errOut := runCLIEnv(t, env, "lock", "-check", dir); code != ExitOK || !strings.Contains(out, "up to date") {
		t.Errorf("lock -check right after lock -upgrade: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLIEnv(t, env, "plan", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(out, `"535.183.06" -> "535.216.01"`) {
		t.Fatalf("plan after lock -upgrade does not install 535.216.01: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestLockUpgradeToABranchNoHostRuns is the dead end: the spec moved to
// branch 550 while the lock pins 535. plan says how to move the lock, and
// the command it names works: lock -upgrade pins the newest 550 release
// the repository offers, which the next plan installs.
func TestLockUpgradeToABranchNoHostRuns(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := t.TempDir()
	driverSpec(t, dir, "535", "sim://hgx-h100-stale")
	if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK {
		t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
	}
	driverSpec(t, dir, "550", "sim://hgx-h100-stale")
	code, out, errOut := runCLIEnv(t, env, "plan", dir)
	if code != ExitFailed || !strings.Contains(strings.Join(strings.Fields(errOut), " "), "Run gpuform lock -upgrade") {
		t.Fatalf("plan with a lock of another branch: exit %d\n%s\n%s", code, out, errOut)
	}
	// Plain lock cannot: no host runs 550. Its error names the way out.
	code, _, errOut = runCLIEnv(t, env, "lock", dir)
	if code != ExitFailed || !strings.Contains(strings.Join(strings.Fields(errOut), " "), "gpuform lock -upgrade") {
		t.Fatalf("lock: exit %d\n%s", code, errOut)
	}
	code, out, errOut = runCLIEnv(t, env, "lock", "-upgrade", dir)
	if code != ExitOK || !strings.Contains(lockFile(t, dir), `"550.127.08"`) {
		t.Fatalf("lock -upgrade: exit %d\n%s\n%s\n%s", code, out, errOut, lockFile(t, dir))
	}
	// issue 30 item 4: no host runs 550 yet, and the CI gate is green.
	if code, out, errOut := runCLIEnv(t, env, "lock", "-check", dir); code != ExitOK || !strings.Contains(out, "up to date") {
		t.Errorf("lock -check right after lock -upgrade: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLIEnv(t, env, "plan", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(out, `"550.127.08"`) {
		t.Fatalf("plan after lock -upgrade: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestLockUpgradeHostsDisagree: two hosts of one node whose repositories
// offer different newest releases; lock -upgrade writes nothing and says
// what each host runs and offers.
func TestLockUpgradeHostsDisagree(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	root, err := sim.MaterializeHost("sim://hgx-h100-stale/b", state)
	if err != nil {
		t.Fatal(err)
	}
	// Host b's lists were refreshed before 535.216.01 was published.
	repo := filepath.Join(root, "var/lib/gpuform-sim/repo.txt")
	b, err := os.ReadFile(repo)
	if err != nil {
		t.Fatal(err)
	}
	kept := strings.ReplaceAll(string(b), "cuda-drivers-535 535.216.01-0ubuntu1\n", "")
	if kept == string(b) {
		t.Fatal("the stale profile's repository no longer offers cuda-drivers-535 535.216.01")
	}
	if err := os.WriteFile(repo, []byte(kept), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	driverSpec(t, dir, "535", "sim://hgx-h100-stale", "sim://hgx-h100-stale/b")
	code, out, errOut := runCLIEnv(t, env, "lock", "-upgrade", dir)
	// The diagnostic is wrapped to the terminal's width.
	flat := strings.Join(strings.Fields(errOut), " ")
	for _, w := range []string{
		"Cannot upgrade a floating version",
		"the hosts' repositories offer different newest releases",
		"sim://hgx-h100-stale runs 535.183.06 and offers 535.216.01, 535.183.06",
		"sim://hgx-h100-stale/b runs 535.183.06 and offers 535.183.06",
	} {
		if code != ExitFailed || !strings.Contains(flat, w) {
			t.Errorf("lock -upgrade: exit %d, lacks %q\n%s\n%s", code, w, out, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".gpuform.lock.hcl")); err == nil {
		t.Error("a failed lock -upgrade wrote the lock file")
	}
}

// TestLockUpgradeDnf: on the Rocky node, whose repository offers NCCL
// 2.25.1 and which runs none, lock -upgrade asks dnf and locks 2.25.1.
func TestLockUpgradeDnf(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"sim://l40s-rocky9\"]\n  nccl { version = \"2.25\" }\n}\n")
	code, out, errOut := runCLIEnv(t, env, "lock", "-upgrade", dir)
	if code != ExitOK || !strings.Contains(lockFile(t, dir), `nccl = "2.25.1"`) {
		t.Fatalf("lock -upgrade: exit %d\n%s\n%s\n%s", code, out, errOut, lockFile(t, dir))
	}
}
