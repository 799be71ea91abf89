// Package registrytest runs an OCI registry on 127.0.0.1 for tests, the
// way httptest runs an HTTP server: go-containerregistry's in-process
// registry, serving images generated in the test. It is not a registry for
// anything but tests: it keeps everything in memory and has no auth.
package registrytest

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is a running test registry.
type Registry struct {
	// Host is "127.0.0.1:PORT", the registry part of references to it.
	Host   string
	server *httptest.Server
}

// Start runs a registry until the test ends.
func Start(t testing.TB) *Registry {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	return &Registry{Host: strings.TrimPrefix(s.URL, "http://"), server: s}
}

// Close stops the registry, so that references to it fail to connect.
func (r *Registry) Close() { r.server.Close() }

// PushIndex pushes a new multi-platform image (linux/amd64 and
// linux/arm64, random layers) under ref ("test/cuda:12") on the registry
// and returns its index digest and the per-platform image digests and
// layer sizes. Pushing again to the same ref moves the tag.
func (r *Registry) PushIndex(t testing.TB, ref string) (v1.Hash, map[string]Image) {
	t.Helper()
	out := map[string]Image{}
	var idx v1.ImageIndex = empty.Index
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(1024, 2)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", arch
		img, err = mutate.ConfigFile(img, cf)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		var size int64
		for _, l := range m.Layers {
			size += l.Size
		}
		out["linux/"+arch] = Image{Digest: d, Size: size}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	tag, err := name.ParseReference(r.Host + "/" + ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx); err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d, out
}

// Image is one platform's image of a pushed index.
type Image struct {
	// Digest is the image manifest's digest.
	Digest v1.Hash
	// Size is the sum of its layers' compressed sizes.
	Size int64
}
