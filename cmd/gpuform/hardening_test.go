package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/registrytest"
	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/sim"
)

// The regression tests of issue 31 that go through the command line: each
// reproduces one thing an adversarial run found broken.

// TestLockHostileRegistryConfigSize: gpuform lock and lock -check against
// a registry that declares a 20 GB config blob fail at once, naming the
// registry and the limit, instead of reading it into memory.
func TestLockHostileRegistryConfigSize(t *testing.T) {
	reg := registrytest.StartHostile(t, registrytest.Hostile{Manifest: registrytest.ImageManifest(20 << 30), BlobEndless: true})
	dir := t.TempDir()
	imageSpec(t, dir, reg.Host+"/nvidia/cuda:12.8")
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	for _, args := range [][]string{{"lock", dir}, {"lock", "-check", dir}} {
		start := time.Now()
		code, out, errOut := runCLIEnv(t, env, args...)
		if code == ExitOK || !strings.Contains(oneLine(errOut), "registry "+reg.Host+" declares a config blob of 20 GiB, over gpuform's limit of 16 MiB") {
			t.Errorf("%s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s took %s", strings.Join(args, " "), took)
		}
	}
	if served := reg.Served(); served > 32<<20 {
		t.Errorf("the registry served %d bytes", served)
	}
}

// oneLine is text with its line wrapping undone, for phrases a diagnostic
// may wrap.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestSensitiveDriverInPrometheus: verify -format prometheus labels every
// GPU with the driver it runs; a sensitive driver version is hidden there
// too (the node that matches it shows the secret otherwise).
func TestSensitiveDriverInPrometheus(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	// The stale node runs 535.183.06: the secret is what it runs.
	dir, vf := sensitiveSpec(t, "535.183.06", `  driver {
    version = var.secret
  }
`)
	code, out, errOut := runCLIEnv(t, env, "verify", "-format", "prometheus", "-var-file", vf, dir)
	if code != ExitOK && code != ExitReport || !strings.Contains(out, `gpuform_gpu_info{`) || !strings.Contains(out, `driver_version="(sensitive value)"`) {
		t.Fatalf("verify -format prometheus: exit %d\n%s%s", code, out, errOut)
	}
	noSecret(t, "verify -format prometheus", []string{out, errOut}, "535.183.06", "535.183")
}

// TestSensitiveImageInCheckID: a check named after a sensitive image
// reference names it by its place in container.images in every format,
// so the id carries nothing of the value.
func TestSensitiveImageInCheckID(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir, vf := sensitiveSpec(t, "24.05-py3", `  container {
    images = ["nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "nvcr.io/nvidia/pytorch:${var.secret}"]
  }
`)
	for _, format := range []string{"text", "json", "junit", "prometheus"} {
		_, out, errOut := runCLIEnv(t, env, "verify", "-format", format, "-var-file", vf, dir)
		if !strings.Contains(out, "container.image_digest.image-2") || !strings.Contains(out, "container.image_digest.nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04") {
			t.Errorf("verify -format %s names the images' checks otherwise:\n%s%s", format, out, errOut)
		}
		noSecret(t, "verify -format "+format, []string{out, errOut}, "24.05-py3", "24.05")
	}
}

// TestPyxisPlugstackKeepsArguments: an admin's pyxis.conf with the
// plugin's arguments and a comment keeps them byte for byte; only the
// keyword and the plugin path are gpuform's.
func TestPyxisPlugstackKeepsArguments(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := specDir(t, "  container {\n    runtime = \"enroot\"\n    nvidia_container_toolkit = \"1.14.3\"\n    pyxis = true\n  }")
	root, err := sim.MaterializeHost("sim://hgx-h100-stale", state)
	if err != nil {
		t.Fatal(err)
	}
	const lib = "/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so"
	writeFileAll(t, filepath.Join(root, lib), "\x7fELF")
	conf := filepath.Join(root, "etc/slurm/plugstack.conf.d/pyxis.conf")
	const args = " container_scope=global sbatch_support=1 runtime_path=/run/pyxis  # site: keep jobs' containers\n"
	admin := "# pyxis for the site, see wiki\n\trequired " + lib + args
	writeFileAll(t, conf, admin)
	// The line is what gpuform wants: its plugin is unchanged.
	if code, out, errOut := runPA(t, env, "", "plan", dir); code != ExitOK || strings.Contains(out, "~ plugin") {
		t.Errorf("plan over the admin's line with arguments: exit %d\n%s\n%s", code, out, errOut)
	}
	// optional becomes required; the arguments and the comment stay.
	writeFile(t, conf, strings.Replace(admin, "required", "optional", 1))
	if code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(conf); string(b) != admin {
		t.Errorf("pyxis.conf after apply:\n%q\nwant\n%q", b, admin)
	}
	// Two pyxis lines: which one slurmd honours is not gpuform's call.
	writeFile(t, conf, admin+"optional "+lib+"\n")
	if code, out, errOut := runPA(t, env, "", "plan", dir); code != ExitFailed || !strings.Contains(oneLine(out+errOut), "loads pyxis 2 times") {
		t.Errorf("plan over two pyxis lines: exit %d\n%s\n%s", code, out, errOut)
	}
}

// writeFileAll is writeFile that makes the directories above path first.
func writeFileAll(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, content)
}

// TestGRESAdminSpellings: an admin's gres.conf that declares the GPUs in
// any spelling slurmd accepts stops the plan, naming the lines, before and
// after gpuform's block is written, and verify cannot pass the node.
func TestGRESAdminSpellings(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := "testdata/gres"
	if code, out, errOut := runPA(t, env, "", "plan", dir); code != ExitOK {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	conf := filepath.Join(state, "hgx-h100-stale@gres", "etc/slurm/gres.conf")
	for _, admin := range []string{
		"Name = gpu File = /dev/nvidia[0-7]",
		`Name="gpu" File="/dev/nvidia[0-7]"`,
		"NodeName=gres NAME=GPU File=/dev/nvidia[0-7]",
		"name=gpu \\\n  File=/dev/nvidia[0-7]",
	} {
		writeFileAll(t, conf, "# site\n"+admin+"\n")
		code, out, errOut := runPA(t, env, "", "plan", dir)
		want := "line 2 (" + strings.ReplaceAll(admin, "\\\n", "") + ") describe GPUs outside gpuform's lines"
		if code == ExitOK || !strings.Contains(out+errOut, want) {
			t.Errorf("plan over %q: exit %d, want %q\n%s%s", admin, code, want, out, errOut)
		}
	}
	// A NodeName line for other nodes gives this one no GPU.
	writeFileAll(t, conf, "NodeName=other[01-04] Name=gpu File=/dev/nvidia[0-7]\n")
	if code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply beside other nodes' line: exit %d\n%s%s", code, out, errOut)
	}
	// gpuform's block is there; an admin line added later fails verify.
	b, _ := os.ReadFile(conf)
	writeFile(t, conf, "Name = gpu File = /dev/nvidia[0-7]\n"+string(b))
	code, checks, vout := verifyJSON(t, env, dir)
	// The comparison cannot be made: spec.compare says why (it was a pass
	// of spec.gres_conf before).
	if code != ExitReport || !hasFailed(checks, "spec.compare") || !strings.Contains(oneLine(vout), "line 1 (Name = gpu File = /dev/nvidia[0-7]) describe GPUs outside gpuform's lines") {
		t.Errorf("verify over the admin's line: exit %d\n%s", code, vout)
	}
}

// TestImageTagLinkRegularFile: a regular file at the name of an image's
// tag link is someone else's: apply refuses to replace it (in a directory
// not yet probed), and once the directory is known plan refuses, naming
// it; the file is never touched.
func TestImageTagLinkRegularFile(t *testing.T) {
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
	root, err := sim.MaterializeHost("sim://dgx-a100", state)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "raid/containers", facts.ImageLinkName(reg.Host+"/nvidia/cuda", "12.8", "enroot"))
	const theirs = "an admin's own squashfs\n"
	writeFileAll(t, link, theirs)
	code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir)
	if code == ExitOK || !strings.Contains(oneLine(out+errOut), "is not the tag's link gpuform makes") {
		t.Errorf("apply over a regular file at the link's name: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, err := os.ReadFile(link); err != nil || string(b) != theirs {
		t.Fatalf("the admin's file was replaced: %q %v", b, err)
	}
	// Moved away, apply pulls and records the directory; a regular file
	// put at the link's name later is a plan error.
	if err := os.Rename(link, link+".admin"); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	writeFile(t, link, theirs)
	code, out, errOut = runCLIEnv(t, env, "plan", dir)
	want := "/raid/containers/" + filepath.Base(link) + " is a regular file, not the tag's link gpuform makes"
	if code != ExitFailed || !strings.Contains(oneLine(out+errOut), want) || !strings.Contains(oneLine(out+errOut), "@sha256-"+first.Hex) {
		t.Errorf("plan over a regular file at the link's name: exit %d, want %q\n%s\n%s", code, want, out, errOut)
	}
	if b, err := os.ReadFile(link); err != nil || string(b) != theirs {
		t.Fatalf("the admin's file was replaced: %q %v", b, err)
	}
}

// TestContainerdInheritsRuncOptions: runc's options written as an inline
// table reach the nvidia runtime gpuform makes the default (containerd's
// own config dump reads SystemdCgroup = true for it), and enable_cdi on
// containerd 1.6, which ignores it, is a plan warning naming the release.
func TestContainerdInheritsRuncOptions(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := specDir(t, containerdSpec)
	root, err := sim.MaterializeHost("sim://hgx-h100-stale", state)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(root, "etc/containerd/config.toml")
	input, err := os.ReadFile("../../provision/resource/testdata/containerd/inline-runc-options.toml")
	if err != nil {
		t.Fatal(err)
	}
	writeFileAll(t, conf, string(input))
	// Debian 12's containerd, the 1.6 release.
	status := filepath.Join(root, "var/lib/dpkg/status")
	b, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, status, string(b)+"\nPackage: containerd\nStatus: install ok installed\nPriority: optional\nArchitecture: amd64\nVersion: 1.6.20~ds1-1+deb12u3\nDescription: daemon to control runC\n")

	code, out, errOut := runPA(t, env, "", "plan", dir)
	all := oneLine(out + errOut)
	if code != ExitOK || !strings.Contains(all, "containerd 1.6.20~ds1-1+deb12u3 (package containerd) ignores enable_cdi") || !strings.Contains(all, "CDI arrived in containerd 1.7") {
		t.Errorf("plan: exit %d, want a warning naming containerd 1.6.20\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{`+ runtimes.nvidia.options.SystemdCgroup`, `+ runtimes.nvidia.options.NoNewKeyring`, `+ runtimes.nvidia.options.ShimCgroup`} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	bin, err := exec.LookPath("containerd")
	if err != nil {
		sshtest.Missing(t, "containerd is not installed (apt-get install containerd): the applied file is not read by it")
	}
	dump, err := exec.Command(bin, "--config", conf, "config", "dump").Output()
	if err != nil {
		t.Fatalf("containerd config dump: %v", err)
	}
	nv := regexp.MustCompile(`(?s)\[plugins\."io\.containerd\.grpc\.v1\.cri"\.containerd\.runtimes\.nvidia\.options\]\n(.*?)\n\s*\[`).FindSubmatch(dump)
	if nv == nil || !regexp.MustCompile(`\bSystemdCgroup = true\b`).Match(nv[1]) || !regexp.MustCompile(`\bNoNewKeyring = true\b`).Match(nv[1]) ||
		!strings.Contains(string(nv[1]), `BinaryName = "/usr/bin/nvidia-container-runtime"`) {
		t.Errorf("containerd reads the nvidia runtime's options as:\n%s", dump)
	}
}

// imageFileSpecShared is imageFileSpec with image_dir_shared set.
func imageFileSpecShared(t *testing.T, dir, rt, ref string, shared bool) {
	t.Helper()
	extra := ""
	if shared {
		extra = "    image_dir_shared = true\n"
	}
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `node "n" {
  hosts = ["sim://dgx-a100"]
  container {
    runtime   = "`+rt+`"
    image_dir = "/raid/containers"
`+extra+`    images    = ["`+ref+`"]
  }
}
`)
}

// TestImageDirTrust: an image_dir other users may write to is refused
// unless the spec says it is shared storage; a file under the pinned
// digest's name that gpuform did not pull is not adopted: plan pulls,
// verify fails it as unverified, apply pulls the registry's image over it.
func TestImageDirTrust(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	first, firstImgs := reg.PushIndex(t, "nvidia/cuda:12.8")
	ref := reg.Host + "/nvidia/cuda:12.8"
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := t.TempDir()
	imageFileSpecShared(t, dir, "enroot", ref, false)
	if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK {
		t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
	}
	root, err := sim.MaterializeHost("sim://dgx-a100", state)
	if err != nil {
		t.Fatal(err)
	}
	images := filepath.Join(root, "raid/containers")
	file := filepath.Join(images, facts.ImageFileName(reg.Host+"/nvidia/cuda", first.String(), "enroot"))
	const planted = "a squashfs someone else built\n"
	writeFileAll(t, file, planted)

	// World-writable: refused, nothing pulled, the file untouched.
	if err := os.Chmod(images, 0o777); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir)
	// Plan refuses it now (TestImageDirTrustAtPlan), before the step would.
	if code == ExitOK || !strings.Contains(oneLine(out+errOut), "image_dir /raid/containers: /raid/containers (owner uid "+strconv.Itoa(os.Getuid())+", mode drwxrwxrwx) is writable by users other than its owner") {
		t.Errorf("apply into a world-writable image_dir: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(file); string(b) != planted {
		t.Fatalf("the file changed under a refused apply: %q", b)
	}

	// Owner-only again: the planted file is not adopted but pulled over.
	if err := os.Chmod(images, 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLIEnv(t, env, "apply", "-auto-approve", dir)
	calls, _ := os.ReadFile(filepath.Join(root, "var/log/gpuform-sim/calls.log"))
	if code != ExitOK || !strings.Contains(string(calls), "enroot import") {
		t.Fatalf("apply over a planted file: exit %d, want a pull\n%s\n%s\n%s", code, out, errOut, calls)
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), firstImgs["linux/amd64"].Digest.String()) {
		t.Errorf("the planted file was adopted, not pulled over: %q", b)
	}
	if status, _, msg := imageCheck(t, env, dir, ref); status != "pass" {
		t.Errorf("verify after the pull: %s %s", status, msg)
	}

	// Someone replaces the pulled file later: plan pulls again, verify
	// fails it as unverified.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	writeFile(t, file, planted)
	code, out, errOut = runCLIEnv(t, env, "plan", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(out, "+ "+ref) {
		t.Errorf("plan over a replaced file: exit %d\n%s\n%s", code, out, errOut)
	}
	if status, observed, msg := imageCheck(t, env, dir, ref); status != "fail" || observed != "unverified" || !strings.Contains(msg, "gpuform did not pull it on this node") {
		t.Errorf("verify of a replaced file: %s %s %s", status, observed, msg)
	}

	// Shared storage, by the spec's word: the directory may be
	// world-writable, and a file there is taken by its name.
	imageFileSpecShared(t, dir, "enroot", ref, true)
	if err := os.Chmod(images, 0o777); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut = runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Errorf("apply into shared storage: exit %d\n%s\n%s", code, out, errOut)
	}
	if status, _, msg := imageCheck(t, env, dir, ref); status != "pass" {
		t.Errorf("verify on shared storage: %s %s", status, msg)
	}
}

// TestContainerdRuntimeOptionsValidate: the spec's override of the
// inherited options is checked: containerd only, and BinaryName is
// gpuform's.
func TestContainerdRuntimeOptionsValidate(t *testing.T) {
	for body, want := range map[string]string{
		"  container {\n    runtime = \"containerd\"\n    containerd_runtime_options = { BinaryName = \"/x\" }\n  }": "BinaryName is gpuform's",
		"  container {\n    runtime = \"enroot\"\n    containerd_runtime_options = { SystemdCgroup = false }\n  }":   "sets the options of containerd's nvidia runtime",
		"  container {\n    runtime = \"enroot\"\n    image_dir_shared = true\n  }":                                  "set image_dir too",
	} {
		code, out, errOut := runCLI(t, "", "validate", specDir(t, body))
		if code != ExitFailed || !strings.Contains(oneLine(out+errOut), want) {
			t.Errorf("validate %q: exit %d, want %q\n%s%s", body, code, want, out, errOut)
		}
	}
}
