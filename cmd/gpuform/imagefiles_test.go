package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/registrytest"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
)

// imageFileSpec writes a spec whose node runs ref with runtime rt (enroot
// or apptainer), pulled into /raid/containers, on a simulated DGX A100.
func imageFileSpec(t *testing.T, dir, rt, ref string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `node "n" {
  hosts = ["sim://dgx-a100"]
  container {
    runtime   = "`+rt+`"
    image_dir = "/raid/containers"
    images    = ["`+ref+`"]
  }
}
`)
}

// Issue 21: enroot and Apptainer pre-pull pinned images as files in
// image_dir, named by digest. Plan lists the pull with its size, apply
// pulls by digest from the registry on 127.0.0.1 (the stand-ins ask it),
// the second plan is empty and verify passes; the tag moves in the
// registry and nothing changes until lock -upgrade, after which verify
// fails the node holding the old digest and apply moves the tag's link;
// with the registry gone the pull fails with the runtime's words.
func TestImageFilesPinnedByDigest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		runtime, ext, call, down string
	}{
		{"enroot", ".sqsh", `enroot import --output /raid/containers/\.%s\.[^ /]+\.[0-9]+\.gpuform-tmp docker://%s#nvidia/cuda:%s\n`, "[ERROR] URL http://%s/v2/nvidia/cuda/manifests/%s returned error"},
		{"apptainer", ".sif", `apptainer pull /raid/containers/\.%s\.[^ /]+\.[0-9]+\.gpuform-tmp docker://%s/nvidia/cuda@%s\n`, "FATAL: While making image from oci registry: error fetching image: reading manifest %[2]s in %[1]s/nvidia/cuda"},
	} {
		t.Run(tc.runtime, func(t *testing.T) {
			t.Parallel()
			reg := registrytest.Start(t)
			first, firstImgs := reg.PushIndex(t, "nvidia/cuda:12.8")
			ref := reg.Host + "/nvidia/cuda:12.8"
			state := t.TempDir()
			env := []string{"GPUFORM_SIM_STATE=" + state}
			dir := t.TempDir()
			imageFileSpec(t, dir, tc.runtime, ref)
			if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK {
				t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
			}
			if status, observed, msg := imageCheck(t, env, dir, ref); status != "fail" || observed != "absent" || !strings.Contains(msg, facts.ImageDirsFile) {
				t.Errorf("verify before apply: %s %s %s", status, observed, msg)
			}

			code, out, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir)
			size := resource.ImageSize(firstImgs["linux/amd64"].Size)
			if code != ExitReport || !strings.Contains(out, "+ "+ref+` = "`+first.String()+" ("+size+`)"`) {
				t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
			}
			code, out, errOut = runCLIEnv(t, env, "apply", "-auto-approve", dir)
			if code != ExitOK || !strings.Contains(out+errOut, "pull "+ref+" at "+first.String()+" ("+size+") with "+tc.runtime+" into /raid/containers") {
				t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
			}
			root, err := sim.MaterializeHost("sim://dgx-a100", state)
			if err != nil {
				t.Fatal(err)
			}
			file := facts.ImageFileName(reg.Host+"/nvidia/cuda", first.String(), tc.runtime)
			link := facts.ImageLinkName(reg.Host+"/nvidia/cuda", "12.8", tc.runtime)
			if !strings.HasSuffix(file, "@sha256-"+first.Hex+tc.ext) || !strings.HasSuffix(link, "+12.8"+tc.ext) {
				t.Fatalf("file names %s %s", file, link)
			}
			calls, _ := os.ReadFile(filepath.Join(root, "var/log/gpuform-sim/calls.log"))
			if want := fmt.Sprintf(tc.call, regexp.QuoteMeta(file), regexp.QuoteMeta(reg.Host), first.String()); !regexp.MustCompile(want).Match(calls) {
				t.Errorf("apply did not pull by digest (%s):\n%s", want, calls)
			}
			images := filepath.Join(root, "raid/containers")
			if got, err := os.Readlink(filepath.Join(images, link)); err != nil || got != file {
				t.Errorf("the tag's link leads to %q (%v), not %s", got, err, file)
			}
			if left, _ := filepath.Glob(filepath.Join(images, ".*")); len(left) != 0 {
				t.Errorf("temporary files left in image_dir: %v", left)
			}
			if b, err := os.ReadFile(filepath.Join(images, file)); err != nil || !strings.Contains(string(b), firstImgs["linux/amd64"].Digest.String()) {
				t.Errorf("the image file does not hold what the registry served at the digest: %v\n%s", err, b)
			}
			if code, out, errOut = runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitOK {
				t.Fatalf("plan after apply: exit %d\n%s\n%s", code, out, errOut)
			}
			if status, _, msg := imageCheck(t, env, dir, ref); status != "pass" {
				t.Errorf("verify after apply: %s %s", status, msg)
			}

			// The tag moves in the registry: nothing changes until
			// lock -upgrade; then verify fails the node at the old
			// digest and apply pulls the new one and moves the link,
			// keeping the old file.
			moved, _ := reg.PushIndex(t, "nvidia/cuda:12.8")
			if code, out, errOut = runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitOK {
				t.Fatalf("plan after the tag moved, before lock -upgrade: exit %d\n%s\n%s", code, out, errOut)
			}
			if code, out, errOut = runCLIEnv(t, env, "lock", "-upgrade", dir); code != ExitOK || !strings.Contains(out, first.String()+" -> "+moved.String()) {
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
			newFile := facts.ImageFileName(reg.Host+"/nvidia/cuda", moved.String(), tc.runtime)
			if got, _ := os.Readlink(filepath.Join(images, link)); got != newFile {
				t.Errorf("after the second apply the tag's link leads to %q, not %s", got, newFile)
			}
			if _, err := os.Stat(filepath.Join(images, file)); err != nil {
				t.Errorf("the old digest's file is gone: %v", err)
			}
			if status, _, msg := imageCheck(t, env, dir, ref); status != "pass" {
				t.Errorf("verify after the second apply: %s %s", status, msg)
			}

			// The registry goes away and the tag's file with it: the
			// pull fails at the image's step with the runtime's words.
			reg.Close()
			if err := os.Remove(filepath.Join(images, newFile)); err != nil {
				t.Fatal(err)
			}
			code, out, errOut = runCLIEnv(t, env, "apply", "-auto-approve", dir)
			all := strings.Join(strings.Fields(out+errOut), " ")
			if code == ExitOK || !strings.Contains(all, "container_images: pull "+ref) || !strings.Contains(all, fmt.Sprintf(tc.down, reg.Host, moved.String())) {
				t.Errorf("apply with the registry down: exit %d\n%s\n%s", code, out, errOut)
			}
			if status, observed, _ := imageCheck(t, env, dir, ref); status != "fail" || observed != "absent" {
				t.Errorf("verify after the failed pull: %s %s", status, observed)
			}
		})
	}
}

// image_dir is an absolute directory, and only for the runtimes that keep
// images as files: an error at the attribute otherwise, never ignored. A
// pinned image on enroot without it is not pulled, and plan says why.
func TestImageDirErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		runtime, dir, want string
	}{
		"docker":   {"docker", "/raid/containers", `image_dir is where enroot and Apptainer keep pulled image files; this container block's runtime is "docker"`},
		"relative": {"apptainer", "raid/containers", "Invalid image directory"},
		"dot dot":  {"enroot", "/raid/../etc", "Invalid image directory"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"sim://dgx-a100\"]\n  container {\n    runtime   = \""+tc.runtime+"\"\n    image_dir = \""+tc.dir+"\"\n  }\n}\n")
			code, _, errOut := runCLIEnv(t, nil, "validate", dir)
			flat := strings.Join(strings.Fields(errOut), " ")
			if code != ExitFailed || !strings.Contains(flat, tc.want) || !strings.Contains(flat, "main.gpuform.hcl line 5") {
				t.Errorf("validate: exit %d\n%s", code, errOut)
			}
		})
	}

	dir := t.TempDir()
	ref := "nvcr.io/nvidia/cuda@sha256:" + strings.Repeat("a", 64)
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"sim://dgx-a100\"]\n  container {\n    runtime = \"enroot\"\n    images  = [\""+ref+"\"]\n  }\n}\n")
	code, out, errOut := runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "plan", "-detailed-exitcode", dir)
	if all := strings.Join(strings.Fields(out+errOut), " "); code != ExitOK || strings.Contains(out, "container_images") || !strings.Contains(all, "runtime enroot keeps images as files; set image_dir") {
		t.Errorf("plan without image_dir: exit %d\n%s\n%s", code, out, errOut)
	}
}

// A spec that names the digest itself gets the digest's file and no tag
// link, with or without a lock file, and verify finds it by the file.
func TestImageFilesByDigestInSpec(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	d, _ := reg.PushIndex(t, "nvidia/cuda:12.8")
	ref := reg.Host + "/nvidia/cuda@" + d.String()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := t.TempDir()
	imageFileSpec(t, dir, "apptainer", ref)
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	root := simRoot(t, state, "dgx-a100")
	names, _ := filepath.Glob(filepath.Join(root, "raid/containers/*"))
	if want := filepath.Join(root, "raid/containers", facts.ImageFileName(reg.Host+"/nvidia/cuda", d.String(), "apptainer")); len(names) != 1 || names[0] != want {
		t.Errorf("image_dir holds %v, want only %s", names, want)
	}
	if code, out, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitOK {
		t.Errorf("plan after apply: exit %d\n%s\n%s", code, out, errOut)
	}
	if status, observed, msg := imageCheck(t, env, dir, ref); status != "pass" || !strings.HasPrefix(observed, d.String()+" (") {
		t.Errorf("verify after apply: %s %s %s", status, observed, msg)
	}
	// Another image_dir: the file in the old one is no image of the spec.
	spec, err := os.ReadFile(filepath.Join(dir, "main.gpuform.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), strings.Replace(string(spec), "/raid/containers", "/scratch/sif", 1))
	if code, out, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitReport || !strings.Contains(out, "+ "+ref) {
		t.Errorf("plan after image_dir moved: exit %d\n%s\n%s", code, out, errOut)
	}
	if status, observed, _ := imageCheck(t, env, dir, ref); status != "fail" || observed != "absent" {
		t.Errorf("verify after image_dir moved: %s %s", status, observed)
	}
}
