package registry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/gpuform/gpuform/internal/registrytest"
	"github.com/gpuform/gpuform/provision/registry"
	"github.com/gpuform/gpuform/spec"
)

// noCreds keeps the tests away from the Docker config of whoever runs them.
var noCreds = registry.Options{Keychain: authn.NewMultiKeychain(), Timeout: 10 * time.Second}

func TestResolve(t *testing.T) {
	reg := registrytest.Start(t)
	idx, imgs := reg.PushIndex(t, "test/cuda:12")
	ref := reg.Host + "/test/cuda:12"

	pin, err := registry.Resolve(context.Background(), ref, spec.ImagePlatforms(), noCreds)
	if err != nil {
		t.Fatal(err)
	}
	if pin.Digest != idx.String() {
		t.Errorf("digest %s, want the index's %s", pin.Digest, idx)
	}
	for p, img := range imgs {
		got := pin.Platforms[p]
		if got.Digest != img.Digest.String() || got.Size != img.Size || got.Size == 0 {
			t.Errorf("%s: %+v, want %s size %d", p, got, img.Digest, img.Size)
		}
	}
	// By digest: the same pin, whatever the tag says later.
	reg.PushIndex(t, "test/cuda:12")
	byDigest, err := registry.Resolve(context.Background(), reg.Host+"/test/cuda@"+idx.String(), spec.ImagePlatforms(), noCreds)
	if err != nil || byDigest.Digest != idx.String() || len(byDigest.Platforms) != 2 {
		t.Errorf("by digest: %+v %v", byDigest, err)
	}
	// Tag and digest: the digest decides.
	both, err := registry.Resolve(context.Background(), reg.Host+"/test/cuda:12@"+idx.String(), spec.ImagePlatforms(), noCreds)
	if err != nil || both.Digest != idx.String() {
		t.Errorf("by tag and digest: %+v %v", both, err)
	}
	moved, err := registry.Resolve(context.Background(), ref, spec.ImagePlatforms(), noCreds)
	if err != nil || moved.Digest == idx.String() {
		t.Errorf("after the tag moved: %+v %v", moved, err)
	}
}

func TestResolveErrors(t *testing.T) {
	reg := registrytest.Start(t)
	reg.PushIndex(t, "test/cuda:12")
	down := registrytest.Start(t)
	down.Close()
	// A registry that wants a login, one that answers garbage and one
	// that never answers.
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer auth.Close()
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("1", 64))
		fmt.Fprint(w, "<html>not a manifest\n\x1b[31mError: forged line\n"+strings.Repeat("x", 5000))
	}))
	defer garbage.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "oops\n\x1b[31mError: forged line\n"+strings.Repeat("x", 5000))
	}))
	defer broken.Close()
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang }))
	defer slow.Close()
	defer close(hang)
	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	cases := map[string]struct {
		ref  string
		want string
	}{
		"unknown tag":     {reg.Host + "/test/cuda:13", "knows no such image or tag"},
		"unknown image":   {reg.Host + "/test/nope:1", "knows no such image or tag"},
		"unknown digest":  {reg.Host + "/test/cuda@sha256:" + strings.Repeat("0", 64), "knows no such image or tag"},
		"registry down":   {down.Host + "/test/cuda:12", "cannot read the manifest from registry " + down.Host},
		"not a reference": {"Bad Ref", "is not an image reference"},
		"login required":  {host(auth) + "/test/cuda:12", "refused access"},
		"garbage":         {host(garbage) + "/test/cuda:12", "cannot read the manifest"},
		"server error":    {host(broken) + "/test/cuda:12", "answered HTTP 500"},
		"no answer":       {host(slow) + "/test/cuda:12", "did not answer within 1s"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := noCreds
			o.Timeout = time.Second
			_, err := registry.Resolve(context.Background(), tc.ref, spec.ImagePlatforms(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			// What a registry says is one bounded line.
			if err != nil && (strings.ContainsAny(err.Error(), "\n\x1b") || len(err.Error()) > 600) {
				t.Errorf("error repeats the registry's text unbounded: %q", err)
			}
		})
	}
}
