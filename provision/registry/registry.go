package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/gpuform/gpuform/spec"
)

// DefaultTimeout bounds the resolution of one reference: a registry that
// accepts the connection and never answers must not hang gpuform lock.
const DefaultTimeout = 60 * time.Second

// Options tune Resolve.
type Options struct {
	// Timeout bounds one reference's resolution; DefaultTimeout when 0.
	Timeout time.Duration
	// Keychain finds credentials for a registry; authn.DefaultKeychain
	// (the Docker config of the user running gpuform, $DOCKER_CONFIG) when
	// nil.
	Keychain authn.Keychain
	// Transport carries the requests; remote.DefaultTransport when nil.
	Transport http.RoundTripper
	// Limits bound each kind of answer; DefaultLimits for a zero field.
	Limits Limits
}

// Resolve asks the registry what ref names now: the digest of its
// manifest and, for each platform in platforms that it offers, that
// platform's image digest and size. A reference that names a digest is
// checked to exist and described the same way. A registry that cannot be
// reached, refuses the credentials, does not know the tag or answers
// something that is not a manifest is an error saying which.
func Resolve(ctx context.Context, ref string, platforms []string, o Options) (spec.ImagePin, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return spec.ImagePin{}, fmt.Errorf("%s is not an image reference: %w", ref, err)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	keys := o.Keychain
	if keys == nil {
		keys = authn.DefaultKeychain
	}
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(keys),
		// One try: lock runs interactively, and a registry that is down
		// should say so now rather than after a minute of back-off.
		remote.WithRetryBackoff(remote.Backoff{Steps: 1}),
		remote.WithUserAgent("gpuform"),
	}
	base := o.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	limits := o.Limits.orDefault()
	opts = append(opts, remote.WithTransport(&limitTransport{base: base, registry: r.Context().RegistryStr(), limits: limits}))
	desc, err := remote.Get(r, opts...)
	if err != nil {
		return spec.ImagePin{}, explain(ctx, r, timeout, err)
	}
	pin := spec.ImagePin{Digest: desc.Digest.String(), Platforms: map[string]spec.PlatformPin{}}
	if d, ok := r.(name.Digest); ok && d.DigestStr() != pin.Digest {
		return spec.ImagePin{}, fmt.Errorf("%s: the registry answered a manifest with digest %s", ref, pin.Digest)
	}
	want := map[string]bool{}
	for _, p := range platforms {
		want[p] = true
	}
	switch {
	case desc.MediaType.IsIndex():
		idx, err := desc.ImageIndex()
		if err != nil {
			return spec.ImagePin{}, explain(ctx, r, timeout, err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return spec.ImagePin{}, explain(ctx, r, timeout, err)
		}
		for _, m := range im.Manifests {
			if m.Platform == nil || !m.MediaType.IsImage() {
				continue
			}
			p := platformName(*m.Platform)
			if !want[p] {
				continue
			}
			if _, dup := pin.Platforms[p]; dup {
				// The first manifest of a platform is the one a
				// runtime picks.
				continue
			}
			img, err := idx.Image(m.Digest)
			if err != nil {
				return spec.ImagePin{}, explain(ctx, r, timeout, err)
			}
			size, err := layerSize(img)
			if err != nil {
				return spec.ImagePin{}, explain(ctx, r, timeout, err)
			}
			pin.Platforms[p] = spec.PlatformPin{Digest: m.Digest.String(), Size: size}
		}
	case desc.MediaType.IsImage():
		img, err := desc.Image()
		if err != nil {
			return spec.ImagePin{}, explain(ctx, r, timeout, err)
		}
		// The manifest declares the config's size: one over the limit is
		// refused before a byte of it is fetched.
		m, err := img.Manifest()
		if err != nil {
			return spec.ImagePin{}, explain(ctx, r, timeout, err)
		}
		if m.Config.Size > limits.Config {
			return spec.ImagePin{}, fmt.Errorf("%s: %w", ref, &TooLargeError{Registry: r.Context().RegistryStr(), Kind: "config blob", Limit: limits.Config, Declared: m.Config.Size})
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return spec.ImagePin{}, explain(ctx, r, timeout, err)
		}
		size, err := layerSize(img)
		if err != nil {
			return spec.ImagePin{}, explain(ctx, r, timeout, err)
		}
		p := platformName(v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant})
		if want[p] {
			pin.Platforms[p] = spec.PlatformPin{Digest: pin.Digest, Size: size}
		}
	default:
		return spec.ImagePin{}, fmt.Errorf("%s: the registry answered a %s, not an image manifest or index", ref, desc.MediaType)
	}
	if len(pin.Platforms) == 0 {
		return spec.ImagePin{}, fmt.Errorf("%s has no image for %s, the platforms of GPU nodes", ref, strings.Join(platforms, " or "))
	}
	return pin, nil
}

// platformName is "os/arch" as registries and runtimes write it; arm64's
// variant (v8) is implied.
func platformName(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" && !(p.Architecture == "arm64" && p.Variant == "v8") {
		s += "/" + p.Variant
	}
	return s
}

// layerSize is what a node downloads to pull img: the sum of its
// compressed layers as the manifest declares them.
func layerSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, l := range m.Layers {
		n += l.Size
	}
	return n, nil
}

// explain turns a registry client error into one sentence a user can act
// on, naming the registry and what it said.
func explain(ctx context.Context, r name.Reference, timeout time.Duration, err error) error {
	reg := r.Context().RegistryStr()
	var big *TooLargeError
	if errors.As(err, &big) {
		return fmt.Errorf("%s: %w", r, big)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: registry %s did not answer within %s", r, reg, timeout)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("%s: interrupted", r)
	}
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%s: registry %s refused access (HTTP %d); log in on this machine (docker login %s) with an account that may pull it", r, reg, te.StatusCode, reg)
		case http.StatusNotFound:
			return fmt.Errorf("%s: registry %s knows no such image or tag (HTTP 404); check the name and tag", r, reg)
		}
		for _, d := range te.Errors {
			switch d.Code {
			case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode:
				return fmt.Errorf("%s: registry %s knows no such image or tag (%s); check the name and tag", r, reg, d.Code)
			case transport.UnauthorizedErrorCode, transport.DeniedErrorCode:
				return fmt.Errorf("%s: registry %s refused access (%s); log in on this machine (docker login %s) with an account that may pull it", r, reg, d.Code, reg)
			}
		}
		return fmt.Errorf("%s: registry %s answered HTTP %d: %s", r, reg, te.StatusCode, remoteText(te.Error()))
	}
	return fmt.Errorf("%s: cannot read the manifest from registry %s: %s", r, reg, remoteText(err.Error()))
}

// maxRemoteText bounds how much of a registry's own words an error
// repeats: a spec names the registry, and its answer must not fill a CI
// log or carry what it should not.
const maxRemoteText = 300

// remoteText is text that came from a registry, fit for one diagnostic
// line: control characters (newlines, terminal escapes) become spaces, so
// it cannot forge lines of gpuform's output, and it is cut at
// maxRemoteText characters.
func remoteText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > maxRemoteText {
		s = string(r[:maxRemoteText]) + "…"
	}
	return s
}
