package registry

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuform/gpuform/internal/readlimit"
)

// Limits bound how much of each kind of registry answer Resolve reads. A
// registry is input gpuform does not control: one that declares a 20 GB
// config blob, or streams a manifest without end, must cost bounded
// memory, not the controller (gpuform lock runs in CI).
type Limits struct {
	// Manifest bounds an image manifest.
	Manifest int64
	// Index bounds an image index (a manifest list).
	Index int64
	// Config bounds an image's config blob.
	Config int64
	// Other bounds every other answer: the /v2/ ping, tokens, errors.
	Other int64
}

// DefaultLimits are far above what real images need and far below what
// hurts. 4 MiB is the manifest size the OCI distribution spec asks
// registries to accept at least and what distribution and containerd
// enforce; an index of fifty platforms with attestations is under 100 KB,
// so it gets the same. A config blob carries the image's history and
// environment, a few KB to a few hundred KB; 16 MiB leaves room for
// images built from hundreds of steps.
var DefaultLimits = Limits{Manifest: 4 << 20, Index: 4 << 20, Config: 16 << 20, Other: 1 << 20}

func (l Limits) orDefault() Limits {
	d := DefaultLimits
	if l.Manifest > 0 {
		d.Manifest = l.Manifest
	}
	if l.Index > 0 {
		d.Index = l.Index
	}
	if l.Config > 0 {
		d.Config = l.Config
	}
	if l.Other > 0 {
		d.Other = l.Other
	}
	return d
}

// TooLargeError is a registry answer over its kind's limit.
type TooLargeError struct {
	// Registry is the registry's host.
	Registry string
	// Kind is "manifest", "index", "config blob" or "answer".
	Kind string
	// Limit is the most bytes gpuform reads of that kind.
	Limit int64
	// Declared is the size the registry declared, when it declared one
	// over the limit (0 when the body simply went on).
	Declared int64
}

func (e *TooLargeError) Error() string {
	a := "a"
	if strings.HasPrefix(e.Kind, "i") || strings.HasPrefix(e.Kind, "a") {
		a = "an"
	}
	if e.Declared > 0 {
		return fmt.Sprintf("registry %s declares %s %s of %s, over gpuform's limit of %s for %s %s", e.Registry, a, e.Kind, readlimit.FormatSize(e.Declared), readlimit.FormatSize(e.Limit), a, e.Kind)
	}
	return fmt.Sprintf("registry %s sent %s %s larger than gpuform's limit of %s for %s %s", e.Registry, a, e.Kind, readlimit.FormatSize(e.Limit), a, e.Kind)
}

// limitTransport caps every response body by the kind of answer it is,
// beneath go-containerregistry's own transports (auth, retries), so that
// no read the library makes, now or in a later version, is unbounded.
type limitTransport struct {
	base     http.RoundTripper
	registry string
	limits   Limits
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	kind, limit := t.kindOf(req, resp)
	if resp.ContentLength > limit {
		resp.Body.Close()
		return nil, &TooLargeError{Registry: t.registry, Kind: kind, Limit: limit, Declared: resp.ContentLength}
	}
	resp.Body = &limitedBody{rc: resp.Body, left: limit, err: &TooLargeError{Registry: t.registry, Kind: kind, Limit: limit}}
	return resp, nil
}

// kindOf names what resp answers: the path of the first request of a
// redirect chain says manifest or blob (a blob is often redirected to
// storage under another path), and a manifest's Content-Type says index.
func (t *limitTransport) kindOf(req *http.Request, resp *http.Response) (string, int64) {
	first := req
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	p := first.URL.Path
	switch {
	case strings.Contains(p, "/manifests/"):
		mt := types.MediaType(strings.TrimSpace(strings.Split(resp.Header.Get("Content-Type"), ";")[0]))
		switch {
		case mt.IsIndex():
			return "index", t.limits.Index
		case mt.IsImage():
			return "manifest", t.limits.Manifest
		}
		// A manifest of no known type may still be an index; the larger
		// of the two limits applies.
		return "manifest", max(t.limits.Manifest, t.limits.Index)
	case strings.Contains(p, "/blobs/"):
		// Resolve fetches no blob but the config.
		return "config blob", t.limits.Config
	}
	return "answer", t.limits.Other
}

// limitedBody fails with err once more than left bytes are read.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
	err  error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.err
	}
	// Read one byte past the limit to tell "exactly the limit" from "over".
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, b.err
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
