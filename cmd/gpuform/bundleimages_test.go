package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuform/gpuform/internal/registrytest"
	"github.com/gpuform/gpuform/provision/bundle"
	"github.com/gpuform/gpuform/provision/registry"
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
