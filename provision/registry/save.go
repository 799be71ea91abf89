package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuform/gpuform/spec"
)

// MaxBlob bounds one blob (a layer) SaveLayout reads: the largest NGC
// images' layers are a few GiB.
const MaxBlob = 32 << 30

// SaveTimeout bounds saving one image: a multi-GiB image over a slow link
// takes minutes, not hours.
const SaveTimeout = time.Hour

// SaveLayout saves the image ref pins for platform ("linux/amd64") into
// the OCI image layout at dir (created when missing; blobs shared across
// images), by its platform digest, and names it in the layout's index
// with ref@digest (org.opencontainers.image.ref.name), as a runtime's
// import reads it. The image's digest is checked against the pin. Where
// the lock pins an index (pin.Digest, not the platform's), the index's
// manifest is saved as a blob too, checked against pin.Digest: a node
// loads the image under the digest the lock pins, with its platform's
// content, as a pull by that digest stores it.
func SaveLayout(ctx context.Context, ref string, pin spec.ImagePin, platform, dir string, o Options) (string, error) {
	pp, ok := pin.Platforms[platform]
	if !ok {
		return "", fmt.Errorf("%s: the lock file pins no %s image of it", ref, platform)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("%s is not an image reference: %w", ref, err)
	}
	d, err := name.NewDigest(r.Context().Name() + "@" + pp.Digest)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, SaveTimeout)
	defer cancel()
	keys := o.Keychain
	if keys == nil {
		keys = authn.DefaultKeychain
	}
	base := o.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	limits := o.Limits.orDefault()
	// Every blob is bounded as a layer here: the config's own bound
	// would refuse the layers.
	limits.Config = max(limits.Config, MaxBlob)
	img, err := remote.Image(d, remote.WithContext(ctx), remote.WithAuthFromKeychain(keys), remote.WithUserAgent("gpuform"),
		remote.WithTransport(&limitTransport{base: base, registry: r.Context().RegistryStr(), limits: limits}))
	if err != nil {
		return "", explain(ctx, r, SaveTimeout, err)
	}
	var index *remote.Descriptor
	if pin.Digest != "" && pin.Digest != pp.Digest {
		id, err := name.NewDigest(r.Context().Name() + "@" + pin.Digest)
		if err != nil {
			return "", err
		}
		if index, err = remote.Get(id, remote.WithContext(ctx), remote.WithAuthFromKeychain(keys), remote.WithUserAgent("gpuform"),
			remote.WithTransport(&limitTransport{base: base, registry: r.Context().RegistryStr(), limits: limits})); err != nil {
			return "", explain(ctx, r, SaveTimeout, err)
		}
		if sum := sha256.Sum256(index.Manifest); "sha256:"+hex.EncodeToString(sum[:]) != pin.Digest {
			return "", fmt.Errorf("%s: the registry answered another manifest for %s", ref, pin.Digest)
		}
	}
	got, err := img.Digest()
	if err != nil {
		return "", err
	}
	if got.String() != pp.Digest {
		return "", fmt.Errorf("%s: the registry answered %s for %s", ref, got, pp.Digest)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return "", err
		}
	}
	named := d.String()
	if err := p.ReplaceImage(img, func(desc v1.Descriptor) bool {
		return desc.Annotations["org.opencontainers.image.ref.name"] == named
	}, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": named})); err != nil {
		return "", fmt.Errorf("saving %s: %w", named, err)
	}
	if index != nil {
		if err := p.WriteBlob(index.Digest, io.NopCloser(bytes.NewReader(index.Manifest))); err != nil {
			return "", fmt.Errorf("saving the index %s of %s: %w", pin.Digest, ref, err)
		}
	}
	return named, nil
}
