package registry_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/registrytest"
	"github.com/gpuform/gpuform/provision/registry"
	"github.com/gpuform/gpuform/spec"
)

// TestResolveHostileRegistry: every kind of answer is read under its own
// limit and inside the time limit; an answer over its limit is an error
// naming the registry and the limit, and the client stops reading (the
// registry served little more than the limit, not the endless body).
func TestResolveHostileRegistry(t *testing.T) {
	const index = "application/vnd.oci.image.index.v1+json"
	cases := map[string]struct {
		answer  registrytest.Hostile
		timeout time.Duration
		want    string
	}{
		// The 20 GB config of the issue: refused before it is fetched.
		"config declared 20 GB": {answer: registrytest.Hostile{Manifest: registrytest.ImageManifest(20 << 30), BlobEndless: true},
			want: "declares a config blob of 20 GiB, over gpuform's limit of 16 MiB for a config blob"},
		"manifest without end": {answer: registrytest.Hostile{Manifest: []byte(`{"schemaVersion":2,"x":"`), ManifestEndless: true},
			want: "sent a manifest larger than gpuform's limit of 4 MiB"},
		"index without end": {answer: registrytest.Hostile{ManifestType: index, Manifest: []byte(`{"schemaVersion":2,"manifests":[`), ManifestEndless: true},
			want: "sent an index larger than gpuform's limit of 4 MiB"},
		"untyped manifest without end": {answer: registrytest.Hostile{ManifestType: "text/plain", Manifest: []byte(`{`), ManifestEndless: true},
			want: "larger than gpuform's limit of 4 MiB"},
		// A registry that answers a byte a second is bounded by the time
		// limit, not by its patience.
		"manifest dripped": {answer: registrytest.Hostile{Manifest: registrytest.ImageManifest(100), Drip: 200 * time.Millisecond},
			timeout: time.Second, want: "did not answer within 1s"},
		"config dripped": {answer: registrytest.Hostile{Manifest: registrytest.ImageManifest(100), Blob: make([]byte, 100), Drip: 200 * time.Millisecond},
			timeout: time.Second, want: "did not answer within 1s"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reg := registrytest.StartHostile(t, tc.answer)
			o := noCreds
			if tc.timeout > 0 {
				o.Timeout = tc.timeout
			}
			start := time.Now()
			_, err := registry.Resolve(context.Background(), reg.Host+"/evil/cuda:12", spec.ImagePlatforms(), o)
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), reg.Host) {
				t.Errorf("error %v, want one naming %s and %q", err, reg.Host, tc.want)
			}
			if took > o.Timeout+2*time.Second {
				t.Errorf("took %s, past the %s limit", took, o.Timeout)
			}
			// Loopback socket buffers hold a few MB; an unbounded read
			// would have taken everything the registry could send.
			if served := reg.Served(); served > 32<<20 {
				t.Errorf("the registry served %d bytes: the read was not stopped at the limit", served)
			}
		})
	}
}

// TestResolveLimitsPerKind: the limits are per kind, so a small limit on
// one kind refuses an answer the others would take.
func TestResolveLimitsPerKind(t *testing.T) {
	reg := registrytest.Start(t)
	reg.PushIndex(t, "test/cuda:12")
	ref := reg.Host + "/test/cuda:12"
	for kind, l := range map[string]registry.Limits{"index": {Index: 64}, "manifest": {Manifest: 64}} {
		o := noCreds
		o.Limits = l
		_, err := registry.Resolve(context.Background(), ref, spec.ImagePlatforms(), o)
		if err == nil || !strings.Contains(err.Error(), " "+kind) || !strings.Contains(err.Error(), "limit of 64 bytes") {
			t.Errorf("%s limit 64: %v", kind, err)
		}
	}
	if _, err := registry.Resolve(context.Background(), ref, spec.ImagePlatforms(), noCreds); err != nil {
		t.Errorf("default limits refuse a real image: %v", err)
	}
}

// FuzzResolveHostile: whatever a registry answers for the manifest and
// the blobs, Resolve returns an error or a pin, inside its time limit,
// and never panics.
func FuzzResolveHostile(f *testing.F) {
	f.Add("application/vnd.oci.image.manifest.v1+json", registrytest.ImageManifest(20<<30), []byte{})
	f.Add("application/vnd.oci.image.manifest.v1+json", registrytest.ImageManifest(-1), []byte("{}"))
	f.Add("application/vnd.oci.image.index.v1+json", []byte(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","size":99999999999,"digest":"sha256:`+strings.Repeat("a", 64)+`","platform":{"os":"linux","architecture":"amd64"}}]}`), []byte{})
	f.Add("application/vnd.docker.distribution.manifest.v2+json", []byte(`{"schemaVersion":2,"config":{"size":2,"digest":"sha256:`+strings.Repeat("0", 64)+`"}}`), []byte("{}"))
	f.Add("", []byte("\x00\xff"), []byte("\x1b[31m"))
	f.Fuzz(func(t *testing.T, contentType string, manifest, blob []byte) {
		if strings.ContainsAny(contentType, "\r\n") {
			return
		}
		reg := registrytest.StartHostile(t, registrytest.Hostile{ManifestType: contentType, Manifest: manifest, Blob: blob})
		o := noCreds
		o.Timeout = 2 * time.Second
		start := time.Now()
		_, _ = registry.Resolve(context.Background(), reg.Host+"/evil/cuda:12", spec.ImagePlatforms(), o)
		if took := time.Since(start); took > 4*time.Second {
			t.Errorf("took %s", took)
		}
	})
}
