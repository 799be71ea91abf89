package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/registrytest"
	"github.com/gpuform/gpuform/provision/sim"
)

// offlineSpec is the quickstart with the driver the simulated node runs
// (branch "535", which lock resolves from the host, with the proprietary
// kernel module it has: the stale node's repository offers no 535 of the
// open flavour, and plan refuses a release no repository offers) and one
// image, ref, in its container block.
func offlineSpec(t *testing.T, ref string) string {
	t.Helper()
	dir := copyQuickstart(t, "535")
	path := filepath.Join(dir, "main.gpuform.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), "    default_runtime          = true\n", "    default_runtime          = true\n    images                   = [\""+ref+"\"]\n", 1)
	if s == string(src) {
		t.Fatal("quickstart's container block no longer sets default_runtime")
	}
	flavour := strings.Replace(s, "kernel_module    = module.stack.kernel_module", `kernel_module    = "proprietary"`, 1)
	if flavour == s {
		t.Fatal("quickstart no longer takes the kernel module from the stack module")
	}
	s = flavour
	writeFile(t, path, s)
	return dir
}

// TestLockOfflineLeavesImageUnpinned is issue 30's item 7: on a machine
// that cannot reach the image's registry, lock -images=false records the
// package releases and leaves the image unpinned with a warning naming
// it (exit 0); plain lock still refuses; plan says plainly that the image
// is unpinned and not pulled, and plans no pull; lock -check, which asks
// no registry, fails the gate on the unpinned tag (exit 1).
func TestLockOfflineLeavesImageUnpinned(t *testing.T) {
	down := registrytest.Start(t)
	down.Close()
	ref := down.Host + "/nvidia/pytorch:25.03-py3"
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := offlineSpec(t, ref)

	code, out, errOut := runCLIEnv(t, env, "lock", "-images=false", dir)
	flat := oneLine(errOut)
	if code != ExitOK || !strings.Contains(flat, "Warning: Container image left unpinned") ||
		!strings.Contains(flat, ref+" is not in the lock file, and -images=false asks no registry, so it stays unpinned") ||
		!strings.Contains(out, `+ node "quickstart" driver: 535.183.06`) || !strings.Contains(out, "Wrote ") {
		t.Fatalf("lock -images=false: exit %d\n%s\n%s", code, out, errOut)
	}
	lock := lockFile(t, dir)
	if !strings.Contains(lock, `driver                   = "535.183.06"`) || strings.Contains(lock, "image ") {
		t.Fatalf("lock file after lock -images=false:\n%s", lock)
	}
	// Again: nothing moves, and the warning stands.
	code, out, errOut = runCLIEnv(t, env, "lock", "-images=false", dir)
	if code != ExitOK || !strings.Contains(out, "is up to date") || !strings.Contains(errOut, "Container image left unpinned") {
		t.Errorf("second lock -images=false: exit %d\n%s\n%s", code, out, errOut)
	}

	// Plain lock must resolve the image, cannot, and writes nothing.
	code, _, errOut = runCLIEnv(t, env, "lock", dir)
	if code != ExitFailed || !strings.Contains(errOut, "Cannot lock a container image") {
		t.Errorf("lock with the registry down: exit %d\n%s", code, errOut)
	}
	if after := lockFile(t, dir); after != lock {
		t.Errorf("a failed lock changed the lock file:\n%s", after)
	}

	// The gate: the tag has no digest in the lock file; -check fails on
	// it without asking the registry.
	code, out, errOut = runCLIEnv(t, env, "lock", "-check", dir)
	flat = oneLine(errOut)
	if code != ExitFailed || !strings.Contains(flat, "Error: Container image not locked") || !strings.Contains(flat, "The lock file records no digest for "+ref) || strings.Contains(flat, "cannot read the manifest") {
		t.Errorf("lock -check: exit %d\n%s\n%s", code, out, errOut)
	}

	// Plan shows the image as unpinned and not pulled, and plans no pull.
	code, out, errOut = runCLIEnv(t, env, "plan", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(oneLine(out), "Warning: container image "+ref+": unpinned, not pulled: the lock file records no digest for it") ||
		strings.Contains(out, "container_images") {
		t.Errorf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestLockOfflineDigestInSpec: a reference that names its digest is
// pinned by the spec, so lock -images=false has nothing to warn about
// and lock -check passes it with no lock entry, asking no registry.
func TestLockOfflineDigestInSpec(t *testing.T) {
	down := registrytest.Start(t)
	down.Close()
	// The registry is not there: no digest of it is published; this one
	// only has the form of one.
	ref := down.Host + "/nvidia/cuda@sha256:" + strings.Repeat("ab", 32)
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := offlineSpec(t, ref)
	code, out, errOut := runCLIEnv(t, env, "lock", "-images=false", dir)
	if code != ExitOK || strings.Contains(errOut, "Warning") || strings.Contains(lockFile(t, dir), "image ") {
		t.Fatalf("lock -images=false: exit %d\n%s\n%s\n%s", code, out, errOut, lockFile(t, dir))
	}
	if code, out, errOut = runCLIEnv(t, env, "lock", "-check", dir); code != ExitOK {
		t.Errorf("lock -check: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestQuickstartCleanOffline: the quickstart, as shipped, lints clean,
// passes lock -check against the lock file it ships, and plans and applies on its simulated node with no
// registry to reach and no warning it could avoid: the only warning of the
// first plan is about the driver the stale node runs, which apply
// replaces, and the plan after apply has none.
func TestQuickstartCleanOffline(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../../examples/quickstart/main.gpuform.hcl")
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile("../../examples/quickstart/.gpuform.lock.hcl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), string(src))
	writeFile(t, filepath.Join(dir, ".gpuform.lock.hcl"), string(lock))
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}

	if code, out, errOut := runCLIEnv(t, env, "lint", dir); code != ExitOK || !strings.Contains(out, "No problems found") {
		t.Errorf("lint: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := runCLIEnv(t, env, "lock", "-check", dir); code != ExitOK || errOut != "" {
		t.Errorf("lock -check: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir)
	if code != ExitReport {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, l := range strings.Split(out+errOut, "\n") {
		if strings.Contains(l, "Warning") && !strings.Contains(l, "the running driver, 535.183.06, is affected by") {
			t.Errorf("plan warns: %s", l)
		}
	}
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLIEnv(t, env, "plan", "-detailed-exitcode", dir)
	if code != ExitOK || strings.Contains(out+errOut, "Warning") {
		t.Errorf("plan after apply: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestPlanFailsUnreachableImage is issue 30 item 5's image half: an image
// the plan would pull is checked from the host, and a registry the host
// cannot reach fails that host's plan before any step, naming the image
// and curl's reason; apply of a plan saved while the registry answered
// changes nothing. An image the node already holds is not pulled, so
// needs no registry.
func TestPlanFailsUnreachableImage(t *testing.T) {
	reg := registrytest.Start(t)
	reg.PushIndex(t, "nvidia/cuda:12.8")
	ref := reg.Host + "/nvidia/cuda:12.8"
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := offlineSpec(t, ref)
	if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK {
		t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
	}
	saved := filepath.Join(t.TempDir(), "plan.bin")
	if code, out, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", "-out", saved, dir); code != ExitReport || !strings.Contains(out, "container_images") {
		t.Fatalf("plan with the registry up: exit %d\n%s\n%s", code, out, errOut)
	}

	reg.Close()
	code, out, errOut := runCLIEnv(t, env, "plan", dir)
	flat := oneLine(out + errOut)
	if code != ExitFailed || !strings.Contains(flat, "preflight: container_images: pull "+ref) ||
		!strings.Contains(flat, "container image "+ref+": registry "+reg.Host+" cannot be reached from this host (curl: (7)") ||
		strings.Contains(out, "driver_package") {
		t.Fatalf("plan with the registry down: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLIEnv(t, env, "apply", saved)
	if code != ExitFailed || !strings.Contains(oneLine(out+errOut), "registry "+reg.Host+" cannot be reached from this host") || !strings.Contains(errOut, "the host fails the checks before apply now") {
		t.Errorf("apply of the saved plan with the registry down: exit %d\n%s\n%s", code, out, errOut)
	}
	root, err := sim.MaterializeHost("sim://hgx-h100-stale", state)
	if err != nil {
		t.Fatal(err)
	}
	// The probe's read-only package listing is allowed; nothing else is.
	if calls := changingCalls(t, root); len(calls) != 0 {
		t.Errorf("apply ran commands on the host:\n%s", strings.Join(calls, "\n"))
	}

	// Offline, an image the node already holds at its digest is fine.
	up := registrytest.Start(t)
	up.PushIndex(t, "nvidia/cuda:12.8")
	env = []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir = t.TempDir()
	imageSpec(t, dir, up.Host+"/nvidia/cuda:12.8")
	if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK {
		t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply with the registry up: exit %d\n%s\n%s", code, out, errOut)
	}
	up.Close()
	if code, out, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitOK {
		t.Errorf("plan of the applied node with the registry down: exit %d\n%s\n%s", code, out, errOut)
	}
}
