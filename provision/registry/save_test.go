package registry_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/gpuform/gpuform/internal/registrytest"
	"github.com/gpuform/gpuform/provision/registry"
	"github.com/gpuform/gpuform/spec"
)

// TestSaveLayout saves a pinned image's linux/amd64 image by digest into
// an OCI layout, named ref@digest, after the tag moved on (the pin, not
// the tag, decides); a pin the registry does not serve is refused.
func TestSaveLayout(t *testing.T) {
	reg := registrytest.Start(t)
	_, imgs := reg.PushIndex(t, "test/cuda:12")
	ref := reg.Host + "/test/cuda:12"
	pin, err := registry.Resolve(context.Background(), ref, spec.ImagePlatforms(), noCreds)
	if err != nil {
		t.Fatal(err)
	}
	reg.PushIndex(t, "test/cuda:12")
	dir := t.TempDir()
	named, err := registry.SaveLayout(context.Background(), ref, pin, "linux/amd64", dir, noCreds)
	if err != nil {
		t.Fatal(err)
	}
	want := reg.Host + "/test/cuda@" + imgs["linux/amd64"].Digest.String()
	if named != want {
		t.Errorf("named %s, want %s", named, want)
	}
	// Saving again replaces the entry instead of adding one.
	if _, err := registry.SaveLayout(context.Background(), ref, pin, "linux/amd64", dir, noCreds); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != imgs["linux/amd64"].Digest || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != want {
		t.Fatalf("layout index: %+v", im.Manifests)
	}
	img, err := p.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("layers: %d %v", len(layers), err)
	}
	bad := pin
	bad.Platforms = map[string]spec.PlatformPin{"linux/amd64": {Digest: "sha256:" + strings.Repeat("0", 64)}}
	if _, err := registry.SaveLayout(context.Background(), ref, bad, "linux/amd64", t.TempDir(), noCreds); err == nil {
		t.Error("a pin the registry does not serve was saved")
	}
	if _, err := registry.SaveLayout(context.Background(), ref, pin, "linux/ppc64le", t.TempDir(), noCreds); err == nil || !strings.Contains(err.Error(), "pins no linux/ppc64le") {
		t.Errorf("an unpinned platform: %v", err)
	}
}
