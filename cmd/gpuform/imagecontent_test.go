package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/registrytest"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/sim"
)

// imageCheckTier is imageCheck at a verify tier.
func imageCheckTier(t *testing.T, env []string, dir, ref, tier string) (status, observed, message string) {
	t.Helper()
	_, out, errOut := runCLIEnv(t, env, "verify", "-tier", tier, "-format", "json", dir)
	var doc struct {
		Hosts []struct {
			Checks []struct{ ID, Status, Observed, Message string }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Hosts) != 1 {
		t.Fatalf("verify -tier %s: %v\n%s\n%s", tier, err, out, errOut)
	}
	for _, c := range doc.Hosts[0].Checks {
		if c.ID == "container.image_digest."+ref {
			return c.Status, c.Observed, c.Message
		}
	}
	t.Fatalf("verify -tier %s has no container.image_digest.%s check\n%s", tier, ref, out)
	return "", "", ""
}

// TestImageFileContentAtFullTier: the ledger records each pulled file's
// sha256 (the one Go's crypto/sha256 computes of the file); a root process
// that rewrites the file in place, keeping its size and modification
// time, passes the identity check of the lower tiers (which say the
// content was not hashed) but fails verify -tier full, naming the file. A
// ledger entry an older gpuform wrote without a hash is an error at the
// full tier, and plan and apply pull the image again.
func TestImageFileContentAtFullTier(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	first, _ := reg.PushIndex(t, "nvidia/cuda:12.8")
	ref := reg.Host + "/nvidia/cuda:12.8"
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := t.TempDir()
	imageFileSpec(t, dir, "enroot", ref)
	if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK {
		t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	root, err := sim.MaterializeHost("sim://dgx-a100", state)
	if err != nil {
		t.Fatal(err)
	}
	name := "/raid/containers/" + facts.ImageFileName(reg.Host+"/nvidia/cuda", first.String(), "enroot")
	file := filepath.Join(root, name)
	content, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	want := "sha256:" + hex.EncodeToString(sum[:])
	ledgerPath := filepath.Join(root, facts.ImageFilesLedger)
	ledger, err := os.ReadFile(ledgerPath)
	if err != nil || !strings.Contains(string(ledger), " "+name+" "+want+"\n") {
		t.Fatalf("the ledger does not record %s's %s: %v\n%s", name, want, err, ledger)
	}
	if status, observed, msg := imageCheckTier(t, env, dir, ref, "full"); status != "pass" || !strings.Contains(observed, "content "+want+", as pulled") {
		t.Errorf("verify -tier full after the pull: %s %s %s", status, observed, msg)
	}
	if status, observed, msg := imageCheckTier(t, env, dir, ref, "quick"); status != "pass" || !strings.HasPrefix(observed, first.String()) || !strings.Contains(observed, "content not hashed at this tier") {
		t.Errorf("verify -tier quick after the pull: %s %s %s", status, observed, msg)
	}

	// Rewritten in place: same inode, size and modification time.
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	forged := []byte(strings.Repeat("X", len(content)))
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(forged, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(file, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if status, _, msg := imageCheckTier(t, env, dir, ref, "quick"); status != "pass" {
		t.Errorf("verify -tier quick (identity only) of the rewritten file: %s %s", status, msg)
	}
	forgedSum := sha256.Sum256(forged)
	status, observed, msg := imageCheckTier(t, env, dir, ref, "full")
	if status != "fail" || observed != "content sha256:"+hex.EncodeToString(forgedSum[:]) || !strings.Contains(msg, name+" changed since gpuform pulled it") || !strings.Contains(msg, want) {
		t.Errorf("verify -tier full of the rewritten file: %s %s %s", status, observed, msg)
	}

	// Removed, the file is pulled again; an entry without a hash (what
	// an older gpuform wrote) is an error at the full tier and pulled
	// again by apply.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply after removing the file: exit %d\n%s\n%s", code, out, errOut)
	}
	ledger, _ = os.ReadFile(ledgerPath)
	old := strings.Replace(string(ledger), " "+want+"\n", "\n", 1)
	if old == string(ledger) {
		t.Fatalf("the re-pull recorded no %s:\n%s", want, ledger)
	}
	writeFile(t, ledgerPath, old)
	if status, _, msg := imageCheckTier(t, env, dir, ref, "full"); status != "error" || !strings.Contains(msg, "no recorded content hash: re-pull with gpuform apply") {
		t.Errorf("verify -tier full of an entry without a hash: %s %s", status, msg)
	}
	if code, out, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitReport || !strings.Contains(out, "+ "+ref) {
		t.Errorf("plan over an entry without a hash: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Errorf("apply over an entry without a hash: exit %d\n%s\n%s", code, out, errOut)
	}
	if ledger, _ = os.ReadFile(ledgerPath); !strings.Contains(string(ledger), " "+name+" "+want+"\n") {
		t.Errorf("apply over an entry without a hash recorded none:\n%s", ledger)
	}
	if status, _, msg := imageCheckTier(t, env, dir, ref, "full"); status != "pass" {
		t.Errorf("verify -tier full after the re-pull: %s %s", status, msg)
	}
}

// imageDirSpec writes a spec whose node pulls ref with enroot into
// imageDir on a simulated DGX A100, image_dir_shared as shared says.
func imageDirSpec(t *testing.T, dir, imageDir, ref string, shared bool) {
	t.Helper()
	extra := ""
	if shared {
		extra = "    image_dir_shared = true\n"
	}
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `node "n" {
  hosts = ["sim://dgx-a100"]
  container {
    runtime   = "enroot"
    image_dir = "`+imageDir+`"
`+extra+`    images    = ["`+ref+`"]
  }
}
`)
}

// TestImageDirTrustAtPlan: an image_dir other users may write to is a
// plan error where the probe sees it (the controller names the spec's
// image_dir to the probe), naming the directory, its owner and mode and
// image_dir_shared; apply stops there too, before any step. A directory
// that does not exist yet is judged by its nearest existing parent; a
// sticky directory above a trusted image_dir is fine; image_dir_shared
// accepts shared storage.
func TestImageDirTrustAtPlan(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	reg.PushIndex(t, "nvidia/cuda:12.8")
	ref := reg.Host + "/nvidia/cuda:12.8"
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := t.TempDir()
	imageDirSpec(t, dir, "/raid/containers", ref, false)
	if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK {
		t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
	}
	root, err := sim.MaterializeHost("sim://dgx-a100", state)
	if err != nil {
		t.Fatal(err)
	}
	images := filepath.Join(root, "raid/containers")
	if err := os.MkdirAll(images, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(images, 0o777); err != nil {
		t.Fatal(err)
	}
	uid := strconv.Itoa(os.Getuid())
	want := "image_dir /raid/containers: /raid/containers (owner uid " + uid + ", mode drwxrwxrwx) is writable by users other than its owner"
	code, out, errOut := runCLIEnv(t, env, "plan", dir)
	all := oneLine(out + errOut)
	if code != ExitFailed || !strings.Contains(all, want) || !strings.Contains(all, "image_dir_shared = true") || strings.Contains(out, "+ "+ref) {
		t.Errorf("plan into a world-writable image_dir: exit %d, want %q\n%s\n%s", code, want, out, errOut)
	}
	code, out, errOut = runCLIEnv(t, env, "apply", "-auto-approve", dir)
	if code == ExitOK || !strings.Contains(oneLine(out+errOut), want) {
		t.Errorf("apply into a world-writable image_dir: exit %d\n%s\n%s", code, out, errOut)
	}
	calls, _ := os.ReadFile(filepath.Join(root, "var/log/gpuform-sim/calls.log"))
	if strings.Contains(string(calls), "enroot import") {
		t.Errorf("apply pulled into a refused image_dir:\n%s", calls)
	}
	for _, p := range []string{facts.ImageDirsFile, facts.ImageFilesLedger} {
		if _, err := os.Stat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("apply wrote %s before refusing: %v", p, err)
		}
	}

	// Not there yet: its nearest existing parent is judged.
	imageDirSpec(t, dir, "/raid/containers/new/deeper", ref, false)
	code, out, errOut = runCLIEnv(t, env, "plan", dir)
	want = "image_dir /raid/containers/new/deeper: /raid/containers/new/deeper does not exist yet, and its nearest existing parent /raid/containers (owner uid " + uid + ", mode drwxrwxrwx) is writable by users other than its owner"
	if code != ExitFailed || !strings.Contains(oneLine(out+errOut), want) {
		t.Errorf("plan into a missing image_dir under a world-writable one: exit %d, want %q\n%s\n%s", code, want, out, errOut)
	}

	// Sticky above, owner-only below: trusted.
	if err := os.Chmod(images, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(images, "new/deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut = runCLIEnv(t, env, "plan", dir); code != ExitOK || !strings.Contains(out, "+ "+ref) {
		t.Errorf("plan into an owner-only image_dir under a sticky one: exit %d\n%s\n%s", code, out, errOut)
	}

	// Shared storage, by the spec's word.
	if err := os.Chmod(images, 0o777); err != nil {
		t.Fatal(err)
	}
	imageDirSpec(t, dir, "/raid/containers", ref, true)
	if code, out, errOut = runCLIEnv(t, env, "plan", dir); code != ExitOK || !strings.Contains(out, "+ "+ref) {
		t.Errorf("plan into shared storage: exit %d\n%s\n%s", code, out, errOut)
	}
}
