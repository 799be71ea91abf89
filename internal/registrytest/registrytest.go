// Package registrytest runs an OCI registry on 127.0.0.1 for tests, the
// way httptest runs an HTTP server: go-containerregistry's in-process
// registry, serving images generated in the test. It is not a registry for
// anything but tests: it keeps everything in memory and has no auth.
package registrytest

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// Hostile describes a registry that answers what a test tells it to,
// whatever the client asked: for limit tests, an endless manifest, a
// manifest declaring a 20 GB config blob, a body dripped a byte at a time.
type Hostile struct {
	// ManifestType is the Content-Type of every manifest answer
	// (application/vnd.oci.image.manifest.v1+json when empty).
	ManifestType string
	// Manifest is the body of every manifest answer.
	Manifest []byte
	// ManifestEndless makes a manifest answer go on after Manifest with
	// spaces until the client hangs up; no Content-Length is sent.
	ManifestEndless bool
	// Blob is the body of every blob answer.
	Blob []byte
	// BlobEndless makes a blob answer go on with zero bytes until the
	// client hangs up.
	BlobEndless bool
	// Drip, when set, writes every body one byte at a time this far apart.
	Drip time.Duration
}

// HostileRegistry is a running Hostile registry.
type HostileRegistry struct {
	// Host is "127.0.0.1:PORT".
	Host   string
	served atomic.Int64
}

// Served is how many body bytes the registry has written so far: what a
// client that stops reading at its limit made it send (plus what the
// sockets' buffers took).
func (h *HostileRegistry) Served() int64 { return h.served.Load() }

// StartHostile runs a Hostile registry until the test ends.
func StartHostile(t testing.TB, answer Hostile) *HostileRegistry {
	t.Helper()
	h := &HostileRegistry{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/" || r.URL.Path == "/v2":
			w.WriteHeader(http.StatusOK)
		case strings.Contains(r.URL.Path, "/manifests/"):
			ct := answer.ManifestType
			if ct == "" {
				ct = "application/vnd.oci.image.manifest.v1+json"
			}
			w.Header().Set("Content-Type", ct)
			h.write(r.Context(), w, answer.Manifest, answer.ManifestEndless, ' ', answer.Drip)
		case strings.Contains(r.URL.Path, "/blobs/"):
			w.Header().Set("Content-Type", "application/octet-stream")
			h.write(r.Context(), w, answer.Blob, answer.BlobEndless, 0, answer.Drip)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	h.Host = strings.TrimPrefix(s.URL, "http://")
	return h
}

// write sends body, then pad bytes without end when endless, until the
// client goes away.
func (h *HostileRegistry) write(ctx context.Context, w http.ResponseWriter, body []byte, endless bool, pad byte, drip time.Duration) {
	if !endless && drip == 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(http.StatusOK)
	chunk := make([]byte, 32<<10)
	for i := range chunk {
		chunk[i] = pad
	}
	send := func(b []byte) bool {
		if drip > 0 {
			for i := range b {
				select {
				case <-ctx.Done():
					return false
				case <-time.After(drip):
				}
				n, err := w.Write(b[i : i+1])
				h.served.Add(int64(n))
				if err != nil {
					return false
				}
				w.(http.Flusher).Flush()
			}
			return true
		}
		n, err := w.Write(b)
		h.served.Add(int64(n))
		return err == nil && ctx.Err() == nil
	}
	if !send(body) || !endless {
		return
	}
	for send(chunk) {
	}
}

// ImageManifest is an OCI image manifest whose config blob is declared
// configSize bytes long, with one small layer.
func ImageManifest(configSize int64) []byte {
	return []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
		`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","size":%d,"digest":"sha256:%064x"},`+
		`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","size":1024,"digest":"sha256:%064x"}]}`, configSize, 1, 2))
}
