package lockfile

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/spec"
)

// ResolveImage asks a registry what an image reference names now.
type ResolveImage func(ctx context.Context, ref string) (spec.ImagePin, error)

// ImageMode says what Images does with an image the lock file does not
// pin yet.
type ImageMode int

const (
	// ImagesResolve asks the image's registry (lock).
	ImagesResolve ImageMode = iota
	// ImagesOffline asks no registry (lock -images=false): a tag the lock
	// file does not pin is left unpinned, with a warning naming it, so
	// that a machine that cannot reach the registries still records the
	// package releases. A reference that names its digest is pinned by
	// the spec already; it is left out of the lock file (its platforms and
	// sizes are the registry's to say), without a warning.
	ImagesOffline
	// ImagesCheck asks no registry either (lock -check): a tag the lock
	// file does not pin is an error, since plan would not pull it and a
	// gate must not pass an image nobody pinned. A reference that names
	// its digest passes without a lock entry, as under ImagesOffline.
	ImagesCheck
)

// Images works out the image pins of cfg's nodes and stores them in lock.
// A reference prev already pins keeps its pin, so that a tag moving in the
// registry changes nothing until upgrade is set: then every reference is
// resolved anew, like a floating version under lock -upgrade (upgrade
// needs ImagesResolve). Each reference is resolved once however many
// nodes use it; one that cannot be resolved is an error at the spec's
// image. mode says what happens to a reference prev does not pin.
func Images(ctx context.Context, cfg *spec.Config, prev, lock *spec.Lock, upgrade bool, mode ImageMode, resolve ResolveImage) hcl.Diagnostics {
	var diags hcl.Diagnostics
	type result struct {
		pin spec.ImagePin
		err error
	}
	done := map[string]result{}
	reported := map[string]bool{}
	for _, n := range cfg.Nodes {
		if n.Container == nil {
			continue
		}
		for _, img := range n.Container.Images {
			pin, ok := prev.Image(n.Name, img.V)
			if !ok || (upgrade && mode == ImagesResolve) {
				if mode != ImagesResolve {
					if d := notAsked(img, mode); d != nil && !reported[img.V] {
						reported[img.V] = true
						diags = append(diags, d)
					}
					continue
				}
				r, seen := done[img.V]
				if !seen {
					r.pin, r.err = resolve(ctx, img.V)
					done[img.V] = r
				}
				if r.err != nil {
					if !seen {
						diags = append(diags, &hcl.Diagnostic{
							Severity: hcl.DiagError,
							Summary:  "Cannot lock a container image",
							Detail:   fmt.Sprintf("%s. gpuform locks every image to the digest its registry serves, so that each node pulls the same build.", r.err),
							Subject:  img.Range.Ptr(),
						})
					}
					continue
				}
				pin = r.pin
			}
			if lock.Images == nil {
				lock.Images = map[string]map[string]spec.ImagePin{}
			}
			if lock.Images[n.Name] == nil {
				lock.Images[n.Name] = map[string]spec.ImagePin{}
			}
			lock.Images[n.Name][img.V] = pin
		}
	}
	return diags
}

// NamesDigest says whether an image reference names its digest itself
// ("repo@sha256:…", "repo:tag@sha256:…"): such an image is pinned by the
// spec, with or without a lock file.
func NamesDigest(ref string) bool {
	return strings.Contains(ref, "@")
}

// notAsked is the diagnostic for an image the lock file does not pin when
// no registry is asked: nil for a reference that names its digest, a
// warning offline, an error under lock -check.
func notAsked(img spec.Attr[string], mode ImageMode) *hcl.Diagnostic {
	if NamesDigest(img.V) {
		return nil
	}
	if mode == ImagesCheck {
		return &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Container image not locked",
			Detail:   fmt.Sprintf("The lock file records no digest for %s, so plan does not pull it. Run gpuform lock where its registry can be reached, or name its digest in the spec (%s@sha256:…).", img.V, img.V),
			Subject:  img.Range.Ptr(),
		}
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagWarning,
		Summary:  "Container image left unpinned",
		Detail:   fmt.Sprintf("%s is not in the lock file, and -images=false asks no registry, so it stays unpinned: plan does not pull it, and gpuform lock -check fails on it. Run gpuform lock where its registry can be reached, or name its digest in the spec (%s@sha256:…).", img.V, img.V),
		Subject:  img.Range.Ptr(),
	}
}
