package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/registrytest"
	"github.com/gpuform/gpuform/provision/bundle"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/registry"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/spec"
)

// TestBundleImages: every image the lock pins for a node block is saved
// for its hosts' platform, by digest, in the bundle's OCI layout, and
// every file of the layout is in the manifest, so Verify covers it.
func TestBundleImages(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	_, imgs := reg.PushIndex(t, "nvidia/pytorch:25.02-py3")
	ref := reg.Host + "/nvidia/pytorch:25.02-py3"
	pin, err := registry.Resolve(context.Background(), ref, spec.ImagePlatforms(), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir, out := t.TempDir(), t.TempDir()
	lockPath := filepath.Join(dir, spec.LockFileName)
	if err := os.WriteFile(lockPath, spec.FormatLock(&spec.Lock{Images: map[string]map[string]spec.ImagePin{"train": {ref: pin}}}), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &bundle.Manifest{}
	groups := map[string]*bundleGroup{"k": {node: "train", platform: platformOf{"debian", "debian 12", "aarch64"}}}
	if err := bundleImages(context.Background(), out, lockPath, m, []string{"k"}, groups); err != nil {
		t.Fatal(err)
	}
	want := reg.Host + "/nvidia/pytorch@" + imgs["linux/arm64"].Digest.String()
	if len(m.Images) != 1 || m.Images[0].Name != want || m.Images[0].Platform != "linux/arm64" || m.Images[0].Node != "train" {
		t.Fatalf("images: %+v, want %s", m.Images, want)
	}
	if _, ok := m.File("images/index.json"); !ok {
		t.Errorf("the layout's index.json is not in the manifest: %+v", m.Files)
	}
	if _, ok := m.File("images/blobs/sha256/" + imgs["linux/arm64"].Digest.Hex); !ok {
		t.Errorf("the image's manifest blob is not in the manifest: %+v", m.Files)
	}
	if err := m.Verify(out, "images/"); err != nil {
		t.Error(err)
	}
}

// TestApplyBundleLoadsImages: with the registry the bundle was built from
// stopped, plan -bundle shows each image loaded from the bundle at its
// digest, with no registry check; a tampered blob is refused by its hash
// and nothing is loaded; a bundle that lacks an image fails the plan;
// apply -bundle copies the blobs the node lacks and loads them with the
// runtime's own tool (the stand-ins check the OCI archive they get), and
// a second plan, with or without the bundle, is empty.
func TestApplyBundleLoadsImages(t *testing.T) {
	t.Parallel()
	for _, rt := range []string{"containerd", "docker", "apptainer"} {
		t.Run(rt, func(t *testing.T) {
			t.Parallel()
			reg := registrytest.Start(t)
			d, imgs := reg.PushIndex(t, "nvidia/cuda:12.8")
			ref := reg.Host + "/nvidia/cuda:12.8"
			name := reg.Host + "/nvidia/cuda@" + d.String()
			state := t.TempDir()
			env := []string{"GPUFORM_SIM_STATE=" + state}
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `node "n" {
  hosts = ["sim://dgx-a100"]
  container {
    runtime = "`+rt+`"
    images  = ["`+ref+`"]`+map[string]string{"apptainer": "\n    image_dir = \"/raid/containers\""}[rt]+`
  }
}
`)
			if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK {
				t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
			}
			out := filepath.Join(t.TempDir(), "bundle")
			if code, stdout, errOut := runCLIEnv(t, env, "bundle", "-out", out, dir); code != ExitOK {
				t.Fatalf("bundle: exit %d\n%s\n%s", code, stdout, errOut)
			}
			reg.Close()
			root, err := sim.MaterializeHost("sim://dgx-a100", state)
			if err != nil {
				t.Fatal(err)
			}
			calls := func() string {
				b, _ := os.ReadFile(filepath.Join(root, "var/log/gpuform-sim/calls.log"))
				return string(b)
			}
			file := facts.ImageFileName(reg.Host+"/nvidia/cuda", d.String(), rt)
			store := func() string {
				if rt == "apptainer" {
					b, _ := os.ReadFile(filepath.Join(root, "raid/containers", file))
					return string(b)
				}
				b, _ := os.ReadFile(filepath.Join(root, "var/lib/gpuform-sim/images", rt))
				return string(b)
			}

			code, stdout, errOut := runCLIEnv(t, env, "plan", "-bundle", out, "-detailed-exitcode", dir)
			if code != ExitReport || !strings.Contains(stdout, "+ "+ref+` = "`+d.String()+" (load from bundle, ") ||
				!strings.Contains(errOut, "Bundle: apply copies the blobs of 1 images to sim://dgx-a100:/var/lib/gpuform/bundle/images/") {
				t.Fatalf("plan -bundle with the registry stopped: exit %d\n%s\n%s", code, stdout, errOut)
			}

			// A tampered layer: refused by its hash, nothing copied or loaded.
			layer := filepath.Join(out, "images/blobs/sha256", layerHex(t, out, imgs["linux/amd64"].Digest.Hex))
			good, err := os.ReadFile(layer)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, layer, "not the layer")
			if code, stdout, errOut := runCLIEnv(t, env, "apply", "-auto-approve", "-bundle", out, dir); code == ExitOK || !strings.Contains(errOut, "does not match the bundle's manifest") {
				t.Errorf("apply -bundle with a tampered blob: exit %d\n%s\n%s", code, stdout, errOut)
			}
			if s := store(); strings.TrimSpace(s) != "" || strings.Contains(calls(), "import") || strings.Contains(calls(), "load") || strings.Contains(calls(), "build") {
				t.Errorf("a refused bundle loaded:\n%s\n%s", s, calls())
			}
			writeFile(t, layer, string(good))

			// A bundle that lacks the image fails the plan, naming it.
			m, err := bundle.ReadManifest(out)
			if err != nil {
				t.Fatal(err)
			}
			lacking := filepath.Join(t.TempDir(), "lacking")
			if err := os.CopyFS(lacking, os.DirFS(out)); err != nil {
				t.Fatal(err)
			}
			m.Images = nil
			if err := bundle.WriteManifest(lacking, m); err != nil {
				t.Fatal(err)
			}
			if code, stdout, errOut := runCLIEnv(t, env, "plan", "-bundle", lacking, dir); code == ExitOK || !strings.Contains(oneLine(stdout+errOut), "holds no linux/amd64 image of "+ref) {
				t.Errorf("plan -bundle of a bundle without the image: exit %d\n%s\n%s", code, stdout, errOut)
			}

			// One blob already on the node, one cut short: only the rest
			// is copied, the short one again.
			blobs := filepath.Join(root, "var/lib/gpuform/bundle/images/blobs/sha256")
			if err := os.MkdirAll(blobs, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(blobs, d.Hex), readFile(t, filepath.Join(out, "images/blobs/sha256", d.Hex)))
			writeFile(t, filepath.Join(blobs, imgs["linux/amd64"].Digest.Hex), "{")
			code, stdout, errOut = runCLIEnv(t, env, "apply", "-auto-approve", "-bundle", out, dir)
			if code != ExitOK || !strings.Contains(stdout+errOut, "4 image blobs copied, 1 already there") {
				t.Fatalf("apply -bundle: exit %d\n%s\n%s", code, stdout, errOut)
			}
			c := calls()
			wantCalls := map[string]string{
				"containerd": "ctr images import --platform linux/amd64 -\n",
				"docker":     "docker load\n",
				"apptainer":  "apptainer build /raid/containers/." + file + ".",
			}[rt]
			tag := map[string]string{
				"containerd": "ctr images tag --force " + name + " " + ref + "\n",
				"docker":     "docker tag " + name + " " + ref + "\n",
				"apptainer":  ".gpuform-tmp oci-archive:/var/lib/gpuform/bundle/images/archives/" + d.Hex + ".tar\n",
			}[rt]
			if !strings.Contains(c, wantCalls) || !strings.Contains(c, tag) || strings.Contains(c, "pull") {
				t.Errorf("apply -bundle did not load by digest and tag, pulling nothing:\n%s", c)
			}
			want := d.String()
			if rt == "apptainer" {
				// The image file is what the archive named: the index,
				// which lists the platform's image.
				want = imgs["linux/amd64"].Digest.String()
				if got, err := os.Readlink(filepath.Join(root, "raid/containers", facts.ImageLinkName(reg.Host+"/nvidia/cuda", "12.8", rt))); err != nil || got != file {
					t.Errorf("the tag's link leads to %q (%v), not %s", got, err, file)
				}
				if left, _ := filepath.Glob(filepath.Join(root, "var/lib/gpuform/bundle/images/archives/*")); len(left) != 0 {
					t.Errorf("archives left on the node: %v", left)
				}
			}
			if s := store(); !strings.Contains(s, want) {
				t.Errorf("the %s store after apply -bundle:\n%s", rt, s)
			}
			if code, stdout, errOut := runCLIEnv(t, env, "plan", "-bundle", out, "-detailed-exitcode", dir); code != ExitOK || strings.Contains(errOut, "Bundle: apply copies the blobs") {
				t.Errorf("plan -bundle after apply: exit %d\n%s\n%s", code, stdout, errOut)
			}
			if code, stdout, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitOK {
				t.Errorf("plan after apply -bundle: exit %d\n%s\n%s", code, stdout, errOut)
			}
		})
	}
}

// layerHex is the sha256 of the first layer of the image manifest hex in
// the bundle at out.
func layerHex(t *testing.T, out, hex string) string {
	t.Helper()
	var man struct{ Layers []struct{ Digest string } }
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(out, "images/blobs/sha256", hex))), &man); err != nil || len(man.Layers) == 0 {
		t.Fatalf("the manifest %s: %v", hex, err)
	}
	return strings.TrimPrefix(man.Layers[0].Digest, "sha256:")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestApplyBundleEnroot: enroot import reads no archive, so gpuform
// bundle has the node block's host import each image with its own enroot
// (the stand-in asks the test's registry) and keeps the image file, named
// by its sha256, in the bundle. With the registry then stopped, plan
// -bundle shows the image loaded from the bundle; a tampered image file
// is refused by its hash with nothing installed; apply -bundle copies the
// file into image_dir under the name a pull gives it, recorded in the
// ledger as a pull, calling no enroot; a second plan, with or without
// the bundle, is empty.
func TestApplyBundleEnroot(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	d, _ := reg.PushIndex(t, "nvidia/cuda:12.8")
	ref := reg.Host + "/nvidia/cuda:12.8"
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := t.TempDir()
	imageFileSpec(t, dir, "enroot", ref)
	if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK {
		t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
	}
	out := filepath.Join(t.TempDir(), "bundle")
	if code, stdout, errOut := runCLIEnv(t, env, "bundle", "-out", out, dir); code != ExitOK {
		t.Fatalf("bundle: exit %d\n%s\n%s", code, stdout, errOut)
	}
	reg.Close()
	m, err := bundle.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Images) != 1 || m.Images[0].EnrootFile == "" {
		t.Fatalf("the bundle names no enroot image file: %+v", m.Images)
	}
	sqsh := m.Images[0].EnrootFile
	f, ok := m.File(sqsh)
	uri := "docker://" + reg.Host + "#nvidia/cuda:" + d.String()
	if !ok || f.Source != "sim://dgx-a100: enroot import "+uri || f.Satisfies != "node n: container image "+ref+" (linux/amd64, enroot)" || sqsh != "images/enroot/"+f.SHA256+".sqsh" {
		t.Fatalf("the manifest's entry of %s: %+v (%v)", sqsh, f, ok)
	}
	root, err := sim.MaterializeHost("sim://dgx-a100", state)
	if err != nil {
		t.Fatal(err)
	}
	calls := func() string {
		b, _ := os.ReadFile(filepath.Join(root, "var/log/gpuform-sim/calls.log"))
		return string(b)
	}
	bundled := len(calls())
	if !strings.Contains(calls(), "enroot import --output /var/tmp/gpuform-bundle.") {
		t.Errorf("the bundling host's enroot imported nothing:\n%s", calls())
	}
	if left, _ := filepath.Glob(filepath.Join(root, "var/tmp/gpuform-bundle.*")); len(left) != 0 {
		t.Errorf("import directories left on the bundling host: %v", left)
	}
	file := filepath.Join(root, "raid/containers", facts.ImageFileName(reg.Host+"/nvidia/cuda", d.String(), "enroot"))

	code, stdout, errOut := runCLIEnv(t, env, "plan", "-bundle", out, "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(stdout, "+ "+ref+` = "`+d.String()+" (load from bundle, ") {
		t.Fatalf("plan -bundle with the registry stopped: exit %d\n%s\n%s", code, stdout, errOut)
	}

	// A tampered image file: refused by its hash, nothing installed.
	good := readFile(t, filepath.Join(out, sqsh))
	writeFile(t, filepath.Join(out, sqsh), "not the image")
	if code, stdout, errOut := runCLIEnv(t, env, "apply", "-auto-approve", "-bundle", out, dir); code == ExitOK || !strings.Contains(errOut, "does not match the bundle's manifest") {
		t.Errorf("apply -bundle with a tampered image file: exit %d\n%s\n%s", code, stdout, errOut)
	}
	if _, err := os.Stat(file); err == nil || strings.Contains(calls()[bundled:], "enroot") {
		t.Errorf("a refused bundle installed %s (%v):\n%s", file, err, calls()[bundled:])
	}
	writeFile(t, filepath.Join(out, sqsh), good)

	code, stdout, errOut = runCLIEnv(t, env, "apply", "-auto-approve", "-bundle", out, dir)
	if code != ExitOK || !strings.Contains(stdout+errOut, "1 image blobs copied, 0 already there") {
		t.Fatalf("apply -bundle: exit %d\n%s\n%s", code, stdout, errOut)
	}
	if c := calls()[bundled:]; strings.Contains(c, "enroot") || strings.Contains(c, "curl") {
		t.Errorf("apply -bundle ran enroot:\n%s", c)
	}
	if got, err := os.ReadFile(file); err != nil || string(got) != good {
		t.Errorf("the image file after apply -bundle: %q (%v), want the bundle's", got, err)
	}
	ledger := readFile(t, filepath.Join(root, facts.ImageFilesLedger))
	if !strings.Contains(ledger, " /raid/containers/"+filepath.Base(file)+" sha256:"+f.SHA256+"\n") {
		t.Errorf("the ledger does not record the image file as a pull:\n%s", ledger)
	}
	if got, err := os.Readlink(filepath.Join(root, "raid/containers", facts.ImageLinkName(reg.Host+"/nvidia/cuda", "12.8", "enroot"))); err != nil || got != filepath.Base(file) {
		t.Errorf("the tag's link leads to %q (%v), not %s", got, err, filepath.Base(file))
	}
	if left, _ := filepath.Glob(filepath.Join(root, "var/lib/gpuform/bundle/images/enroot/*")); len(left) != 0 {
		t.Errorf("the bundle's image file left on the node: %v", left)
	}
	if code, stdout, errOut := runCLIEnv(t, env, "plan", "-bundle", out, "-detailed-exitcode", dir); code != ExitOK {
		t.Errorf("plan -bundle after apply: exit %d\n%s\n%s", code, stdout, errOut)
	}
	if code, stdout, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitOK {
		t.Errorf("plan after apply -bundle: exit %d\n%s\n%s", code, stdout, errOut)
	}
}

// TestPlanBundleEnrootRefused: a bundle without the enroot image file of
// an image an enroot node lacks (enroot import reads no archive, so the
// OCI layout cannot serve) fails plan -bundle before any change, naming
// the image, rather than plan a pull from a registry the site lacks.
func TestPlanBundleEnrootRefused(t *testing.T) {
	t.Parallel()
	reg := registrytest.Start(t)
	reg.PushIndex(t, "nvidia/cuda:12.8")
	ref := reg.Host + "/nvidia/cuda:12.8"
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := t.TempDir()
	imageFileSpec(t, dir, "enroot", ref)
	if code, out, errOut := runCLIEnv(t, env, "lock", dir); code != ExitOK {
		t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
	}
	out := filepath.Join(t.TempDir(), "bundle")
	if code, stdout, errOut := runCLIEnv(t, env, "bundle", "-out", out, dir); code != ExitOK {
		t.Fatalf("bundle: exit %d\n%s\n%s", code, stdout, errOut)
	}
	m, err := bundle.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Images {
		m.Images[i].EnrootFile = ""
	}
	if err := bundle.WriteManifest(out, m); err != nil {
		t.Fatal(err)
	}
	if code, stdout, errOut := runCLIEnv(t, env, "plan", "-bundle", out, dir); code == ExitOK || !strings.Contains(oneLine(stdout+errOut), "holds no enroot image file of "+ref+" (linux/amd64) for node \"n\"") {
		t.Errorf("plan -bundle of an enroot node: exit %d\n%s\n%s", code, stdout, errOut)
	}
}
