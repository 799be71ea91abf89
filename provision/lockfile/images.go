package lockfile

import (
	"context"
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/spec"
)

// ResolveImage asks a registry what an image reference names now.
type ResolveImage func(ctx context.Context, ref string) (spec.ImagePin, error)

// Images works out the image pins of cfg's nodes and stores them in lock.
// A reference prev already pins keeps its pin, so that a tag moving in the
// registry changes nothing until upgrade is set: then every reference is
// resolved anew, like a floating version under lock -upgrade. Each
// reference is resolved once however many nodes use it; one that cannot
// be resolved is an error at the spec's image.
func Images(ctx context.Context, cfg *spec.Config, prev, lock *spec.Lock, upgrade bool, resolve ResolveImage) hcl.Diagnostics {
	var diags hcl.Diagnostics
	type result struct {
		pin spec.ImagePin
		err error
	}
	done := map[string]result{}
	for _, n := range cfg.Nodes {
		if n.Container == nil {
			continue
		}
		for _, img := range n.Container.Images {
			pin, ok := prev.Image(n.Name, img.V)
			if !ok || upgrade {
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
