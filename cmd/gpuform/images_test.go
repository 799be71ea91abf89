package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/registrytest"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
)

// imageSpec writes a spec whose node runs ref on a simulated DGX A100.
func imageSpec(t *testing.T, dir, ref string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `node "n" {
  hosts = ["sim://dgx-a100"]
  container {
    runtime = "docker"
    images  = ["`+ref+`"]
  }
}
`)
}

// imageCheck runs verify and returns the status, observed value and
// message of the container.image_digest check of ref.
func imageCheck(t *testing.T, env []string, dir, ref string) (status, observed, message string) {
	t.Helper()
	_, out, errOut := runCLIEnv(t, env, "verify", "-format", "json", dir)
	var doc struct {
		Hosts []struct {
			Checks []struct{ ID, Status, Observed, Message string }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Hosts) != 1 {
		t.Fatalf("verify: %v\n%s\n%s", err, out, errOut)
	}
	for _, c := range doc.Hosts[0].Checks {
		if c.ID == "container.image_digest."+ref {
			return c.Status, c.Observed, c.Message
		}
	}
	t.Fatalf("verify has no container.image_digest.%s check\n%s", ref, out)
	return "", "", ""
}

// TestImagesPinnedByDigest is the whole life of a pinned image against a
// registry on 127.0.0.1: lock resolves the tag to its digest, apply pulls
// it by digest, verify finds it; the tag moves in the registry and nothing
// changes until lock -upgrade, after which plan pulls the new build and
// verify fails the node that still holds the old one.
func TestImagesPinnedByDigest(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	first, firstImgs := reg.PushIndex(t, "nvidia/cuda:12.8")
	ref := reg.Host + "/nvidia/cuda:12.8"
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := t.TempDir()
	imageSpec(t, dir, ref)

	code, out, errOut := runCLIEnv(t, env, "lock", dir)
	lock := lockFile(t, dir)
	if code != ExitOK || !strings.Contains(out, `+ node "n" image `+ref+": "+first.String()) ||
		!strings.Contains(lock, `image "`+ref+`" {`) || !strings.Contains(lock, `digest = "`+first.String()+`"`) ||
		!strings.Contains(lock, firstImgs["linux/amd64"].Digest.String()) || !strings.Contains(lock, firstImgs["linux/arm64"].Digest.String()) {
		t.Fatalf("lock: exit %d\n%s\n%s\n%s", code, out, errOut, lock)
	}

	// Plan pulls the image at its digest and says how much it downloads.
	code, out, errOut = runCLIEnv(t, env, "plan", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(out, "container_images") || !strings.Contains(out, first.String()+" (") {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut = runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	root, err := sim.MaterializeHost("sim://dgx-a100", state)
	if err != nil {
		t.Fatal(err)
	}
	calls, _ := os.ReadFile(filepath.Join(root, "var/log/gpuform-sim/calls.log"))
	byDigest := reg.Host + "/nvidia/cuda@" + first.String()
	if !strings.Contains(string(calls), "docker pull "+byDigest+"\ndocker tag "+byDigest+" "+ref+"\n") {
		t.Errorf("apply did not pull by digest and tag:\n%s", calls)
	}
	if code, out, errOut = runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitOK {
		t.Fatalf("plan after apply: exit %d\n%s\n%s", code, out, errOut)
	}
	if status, _, msg := imageCheck(t, env, dir, ref); status != "pass" {
		t.Errorf("verify after apply: %s %s", status, msg)
	}

	// The tag moves. The lock does not, and neither does plan.
	moved, _ := reg.PushIndex(t, "nvidia/cuda:12.8")
	if code, out, errOut = runCLIEnv(t, env, "lock", dir); code != ExitOK || !strings.Contains(out, "is up to date") {
		t.Fatalf("lock after the tag moved: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut = runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitOK {
		t.Fatalf("plan after the tag moved, before lock -upgrade: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLIEnv(t, env, "lock", "-upgrade", dir)
	if code != ExitOK || !strings.Contains(out, `~ node "n" image `+ref+": "+first.String()+" -> "+moved.String()) {
		t.Fatalf("lock -upgrade: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLIEnv(t, env, "plan", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(out, first.String()) || !strings.Contains(out, moved.String()+" (") {
		t.Fatalf("plan after lock -upgrade: exit %d\n%s\n%s", code, out, errOut)
	}
	status, observed, msg := imageCheck(t, env, dir, ref)
	if status != "fail" || observed != first.String() || !strings.Contains(msg, "the tag now points elsewhere") {
		t.Errorf("verify of the node holding the old digest: %s %s %s", status, observed, msg)
	}
	if code, out, errOut = runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply after lock -upgrade: exit %d\n%s\n%s", code, out, errOut)
	}
	if status, _, msg := imageCheck(t, env, dir, ref); status != "pass" {
		t.Errorf("verify after the second apply: %s %s", status, msg)
	}

	// With the registry gone, lock keeps the pins it has without asking;
	// -upgrade must ask, and fails; -images=false upgrades the rest.
	reg.Close()
	if code, out, errOut = runCLIEnv(t, env, "lock", dir); code != ExitOK || !strings.Contains(out, "is up to date") {
		t.Errorf("lock with the registry down: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut = runCLIEnv(t, env, "lock", "-upgrade", dir); code != ExitFailed || !strings.Contains(errOut, "Cannot lock a container image") {
		t.Errorf("lock -upgrade with the registry down: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut = runCLIEnv(t, env, "lock", "-upgrade", "-images=false", dir); code != ExitOK || !strings.Contains(out, "is up to date") {
		t.Errorf("lock -upgrade -images=false with the registry down: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestImagesLockErrors: a registry that does not know the tag, or is not
// there, stops lock with a diagnostic at the image, and nothing is written.
func TestImagesLockErrors(t *testing.T) {
	reg := registrytest.Start(t)
	reg.PushIndex(t, "nvidia/cuda:12.8")
	down := registrytest.Start(t)
	down.Close()
	cases := map[string]struct {
		ref  string
		want string
	}{
		"unknown tag":   {reg.Host + "/nvidia/cuda:13.0", "knows no such image or tag"},
		"registry down": {down.Host + "/nvidia/cuda:12.8", "cannot read the manifest from registry " + down.Host},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			imageSpec(t, dir, tc.ref)
			code, out, errOut := runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "lock", dir)
			flat := strings.Join(strings.Fields(errOut), " ")
			if code != ExitFailed || !strings.Contains(flat, "Cannot lock a container image") || !strings.Contains(flat, tc.want) || !strings.Contains(flat, "main.gpuform.hcl line 5") {
				t.Errorf("lock: exit %d\n%s\n%s", code, out, errOut)
			}
			if _, err := os.Stat(filepath.Join(dir, ".gpuform.lock.hcl")); err == nil {
				t.Error("a failed lock wrote the lock file")
			}
			// Without the registry, an image not locked yet cannot be.
			code, _, errOut = runCLIEnv(t, nil, "lock", "-images=false", dir)
			if code != ExitFailed || !strings.Contains(strings.Join(strings.Fields(errOut), " "), "-images=false does not ask its registry") {
				t.Errorf("lock -images=false: exit %d\n%s", code, errOut)
			}
		})
	}
}

// TestImagesByDigestInSpec: a spec that names the digest itself is pulled
// at it, lock records its platforms and sizes, and a malformed digest is
// an error at the image.
func TestImagesByDigestInSpec(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	d, imgs := reg.PushIndex(t, "nvidia/cuda:12.8")
	ref := reg.Host + "/nvidia/cuda@" + d.String()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := t.TempDir()
	imageSpec(t, dir, ref)
	// Without a lock file it is pinned already: plan pulls it.
	code, out, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(out, "+ "+ref+` = "`+d.String()+`"`) {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLIEnv(t, env, "lock", dir)
	if code != ExitOK || !strings.Contains(lockFile(t, dir), imgs["linux/arm64"].Digest.String()) {
		t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
	}
	// Locked, plan knows the download size of the node's platform.
	code, out, errOut = runCLIEnv(t, env, "plan", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(out, "+ "+ref+` = "`+d.String()+" ("+resource.ImageSize(imgs["linux/amd64"].Size)+`)"`) {
		t.Fatalf("plan after lock: exit %d\n%s\n%s", code, out, errOut)
	}

	imageSpec(t, dir, reg.Host+"/nvidia/cuda@sha256:abc")
	code, _, errOut = runCLIEnv(t, env, "validate", dir)
	if code != ExitFailed || !strings.Contains(errOut, "Invalid container image") {
		t.Errorf("validate of a short digest: exit %d\n%s", code, errOut)
	}
}

// TestImagesContainerd: with runtime = "containerd" apply pulls into
// containerd's k8s.io namespace (nerdctl, which reads the node's registry
// credentials, where the node has it) and verify finds the digest there.
func TestImagesContainerd(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	d, _ := reg.PushIndex(t, "nvidia/cuda:12.8")
	ref := reg.Host + "/nvidia/cuda:12.8"
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `node "n" {
  hosts = ["sim://dgx-a100"]
  container {
    runtime = "containerd"
    images  = ["`+ref+`"]
  }
}
`)
	if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK {
		t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
	}
	if status, observed, _ := imageCheck(t, env, dir, ref); status != "fail" || observed != "absent" {
		t.Errorf("verify before apply: %s %s", status, observed)
	}
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	root, err := sim.MaterializeHost("sim://dgx-a100", state)
	if err != nil {
		t.Fatal(err)
	}
	calls, _ := os.ReadFile(filepath.Join(root, "var/log/gpuform-sim/calls.log"))
	byDigest := reg.Host + "/nvidia/cuda@" + d.String()
	if !strings.Contains(string(calls), "nerdctl --namespace k8s.io pull "+byDigest+"\nnerdctl --namespace k8s.io tag "+byDigest+" "+ref+"\n") {
		t.Errorf("apply did not pull into containerd by digest:\n%s", calls)
	}
	if status, _, msg := imageCheck(t, env, dir, ref); status != "pass" {
		t.Errorf("verify after apply: %s %s", status, msg)
	}
	if code, out, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitOK {
		t.Errorf("plan after apply: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestImagesPullFails: a node whose registry login is missing fails its
// apply at the image's step, with the runtime's own words, and verify
// keeps failing the image until a pull succeeds.
func TestImagesPullFails(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	reg.PushIndex(t, "nvidia/cuda:12.8")
	ref := reg.Host + "/nvidia/cuda:12.8"
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := t.TempDir()
	imageSpec(t, dir, ref)
	if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK {
		t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
	}
	root, err := sim.MaterializeHost("sim://dgx-a100", state)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "var/lib/gpuform-sim/fail"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "var/lib/gpuform-sim/fail/docker"), "Error response from daemon: unauthorized: authentication required\n")
	code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir)
	all := strings.Join(strings.Fields(out+errOut), " ")
	if code == ExitOK || !strings.Contains(all, "container_images: pull "+ref) || !strings.Contains(all, "unauthorized: authentication required") {
		t.Errorf("apply with a failing pull: exit %d\n%s\n%s", code, out, errOut)
	}
	if status, observed, _ := imageCheck(t, env, dir, ref); status != "fail" || observed != "absent" {
		t.Errorf("verify after the failed pull: %s %s", status, observed)
	}
}
