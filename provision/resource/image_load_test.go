package resource

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/registrytest"
	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/bundle"
	"github.com/gpuform/gpuform/provision/registry"
	"github.com/gpuform/gpuform/spec"
)

// TestImageLoadRealContainerd runs an image's load step of apply -bundle
// against the real containerd (Debian's package: scripts/test.sh installs
// it), started on a socket of its own: the blobs a bundle saved from the
// test registry, copied to the node's directory, are imported by ctr for
// the node's platform, under the digest the lock pins (the index's), and
// tagged; the store lists both as the probe reads them. A blob whose
// sha256 is not its name is refused first, and nothing is imported.
func TestImageLoadRealContainerd(t *testing.T) {
	bin, err := exec.LookPath("containerd")
	if err != nil {
		sshtest.Missing(t, "containerd is not installed (apt-get install containerd)")
	}
	ctrBin, err := exec.LookPath("ctr")
	if err != nil {
		sshtest.Missing(t, "ctr is not installed (apt-get install containerd)")
	}
	if os.Geteuid() != 0 {
		sshtest.Missing(t, "containerd runs as root only")
	}
	ctx := context.Background()
	reg := registrytest.Start(t)
	d, _ := reg.PushIndex(t, "nvidia/cuda:12.8")
	ref := reg.Host + "/nvidia/cuda:12.8"
	pin, err := registry.Resolve(ctx, ref, spec.ImagePlatforms(), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	named, err := registry.SaveLayout(ctx, ref, pin, "linux/amd64", filepath.Join(out, bundle.ImagesDir), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := &bundle.Manifest{Images: []bundle.Image{{Node: "n", Ref: ref, Platform: "linux/amd64", Name: named}}}
	if err := filepath.WalkDir(filepath.Join(out, bundle.ImagesDir), func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		return m.AddFile(out, filepath.ToSlash(rel), "test", "")
	}); err != nil {
		t.Fatal(err)
	}
	im := ImageRef{Ref: ref, Repo: reg.Host + "/nvidia/cuda", Tag: "12.8", Digest: d.String()}
	b := m.LoadImage(out, "n", ref, im.Repo, im.Digest, "linux/amd64")
	if b.Missing != "" {
		t.Fatal(b.Missing)
	}
	// The node's copy (StageImages' work).
	b.Dir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(b.Dir, "blobs/sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, h := range b.Blobs {
		c, err := os.ReadFile(filepath.Join(out, bundle.ImagesDir, "blobs/sha256", h))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b.Dir, "blobs/sha256", h), c, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	ctd := t.TempDir()
	sock := filepath.Join(ctd, "sock")
	cfg := filepath.Join(ctd, "config.toml")
	if err := os.WriteFile(cfg, []byte("version = 2\nroot = \""+ctd+"/root\"\nstate = \""+ctd+"/state\"\ndisabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n[grpc]\n  address = \""+sock+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	daemon := exec.Command(bin, "--config", cfg)
	log, err := os.Create(filepath.Join(ctd, "log"))
	if err != nil {
		t.Fatal(err)
	}
	daemon.Stdout, daemon.Stderr = log, log
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = daemon.Process.Kill()
		_ = daemon.Wait()
		log.Close()
	})
	ctr := func(args ...string) string {
		t.Helper()
		o, err := exec.Command(ctrBin, append([]string{"--address", sock, "-n", "k8s.io"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, o)
		}
		return string(o)
	}
	for i := 0; ; i++ {
		if _, err := exec.Command(ctrBin, "--address", sock, "version").CombinedOutput(); err == nil {
			break
		}
		if i == 100 {
			b, _ := os.ReadFile(filepath.Join(ctd, "log"))
			t.Fatalf("containerd did not start:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	wrap := t.TempDir()
	if err := os.WriteFile(filepath.Join(wrap, "ctr"), []byte("#!/bin/sh\nexec "+ctrBin+" --address "+sock+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &imagesResource{base: base{name: ContainerImages}, runtime: "containerd"}
	steps, err := r.load(im, b, "linux/amd64")
	if err != nil || len(steps) != 1 {
		t.Fatal(steps, err)
	}
	st := steps[0]
	run := func() (int, string) {
		cmd := exec.Command("/bin/sh", "-c", st.Script)
		cmd.Env = append(os.Environ(), "GPUFORM_ROOT=", "PATH="+wrap+":"+os.Getenv("PATH"))
		cmd.Stdin = strings.NewReader(st.Input)
		o, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(o)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(o)
	}

	last := filepath.Join(b.Dir, "blobs/sha256", b.Blobs[len(b.Blobs)-1])
	good, err := os.ReadFile(last)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(last, []byte("not the layer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, o := run(); code == 0 || !strings.Contains(o, "refused by its hash, nothing was loaded") {
		t.Errorf("the load of a tampered blob: exit %d\n%s", code, o)
	}
	if ls := ctr("images", "ls", "-q"); strings.TrimSpace(ls) != "" {
		t.Errorf("a refused load imported:\n%s", ls)
	}
	if err := os.WriteFile(last, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, o := run(); code != 0 {
		t.Fatalf("the load: exit %d\n%s", code, o)
	}
	got := map[string]string{}
	for _, l := range strings.Split(ctr("images", "ls"), "\n")[1:] {
		if f := strings.Fields(l); len(f) > 2 {
			got[f[0]] = f[2]
		}
	}
	want := map[string]string{b.Name: d.String(), ref: d.String()}
	if len(got) != len(want) || got[b.Name] != want[b.Name] || got[ref] != want[ref] {
		t.Errorf("containerd's images after the load: %v, want %v", got, want)
	}
	if ents, _ := os.ReadDir(b.Dir); len(ents) != 1 {
		t.Errorf("the load left files behind in %s: %v", b.Dir, ents)
	}
}
