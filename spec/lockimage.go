package spec

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// ImagePin is what the lock file records for one container image of a
// node: the digest its reference resolved to and, per platform, the
// digest and size of the image a node of that platform pulls. Nodes pull
// by Digest, so a tag that moves in the registry changes nothing on them
// until gpuform lock -upgrade records the new digest.
type ImagePin struct {
	// Digest is the manifest digest the reference names ("sha256:…"): a
	// multi-platform index's, or the one image's when there is no index.
	Digest string
	// Platforms maps "os/arch" ("linux/amd64") to that platform's image.
	Platforms map[string]PlatformPin
	// Range is the pin's digest in the lock file.
	Range hcl.Range
}

// PlatformPin is one platform's image of a pinned reference.
type PlatformPin struct {
	// Digest is the platform's image manifest digest.
	Digest string
	// Size is the sum of the image's compressed layer sizes in bytes, as
	// the registry's manifest reports them; 0 when it reports none.
	Size int64
}

// digestPattern is an OCI sha256 digest, the only algorithm registries
// serve in practice.
var digestPattern = lazyre.New(`^sha256:[a-f0-9]{64}$`)

// platformPattern is an OCI platform as registries name it: os/arch and
// an optional variant ("linux/arm64/v8").
var platformPattern = lazyre.New(`^[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?$`)

// ValidDigest reports whether d is a sha256 digest as registries write it.
func ValidDigest(d string) bool { return digestPattern.MatchString(d) }

// ImageDigest returns the digest a reference names itself
// ("nvcr.io/x@sha256:…"), or "" for a reference by tag only.
func ImageDigest(ref string) string {
	if _, d, ok := strings.Cut(ref, "@"); ok {
		return d
	}
	return ""
}

// Platform is the "os/arch" of a node whose kernel reports machine
// ("x86_64", "aarch64"), as registries name platforms; "" when unknown.
func Platform(machine string) string {
	switch machine {
	case "x86_64", "amd64":
		return "linux/amd64"
	case "aarch64", "arm64":
		return "linux/arm64"
	}
	return ""
}

// imagePlatforms are the platforms gpuform locks images for: the CPU
// architectures of GPU nodes (x86 servers and Grace).
var imagePlatforms = []string{"linux/amd64", "linux/arm64"}

// ImagePlatforms returns the platforms gpuform locks each image for.
func ImagePlatforms() []string { return slices.Clone(imagePlatforms) }

var (
	lockNodeSchema = &hcl.BodySchema{
		Blocks: []hcl.BlockHeaderSchema{{Type: "image", LabelNames: []string{"reference"}}},
	}
	lockImageSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "digest", Required: true}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "platform", LabelNames: []string{"name"}}},
	}
	lockPlatformSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "digest", Required: true}, {Name: "size"}},
	}
)

// decodeLockImages reads a lock file node body's image blocks and returns
// them with the body's attributes (the component pins).
func decodeLockImages(body hcl.Body) (map[string]ImagePin, hcl.Attributes, hcl.Diagnostics) {
	content, _, diags := body.PartialContent(lockNodeSchema)
	var pins map[string]ImagePin
	first := map[string]hcl.Range{}
	for _, b := range content.Blocks {
		ref := b.Labels[0]
		if prev, dup := first[ref]; dup {
			diags = append(diags, duplicateDiag("image", ref, b.LabelRanges[0], prev))
			continue
		}
		first[ref] = b.DefRange
		// The spec accepts only references imagePattern matches, so the
		// lock records only those.
		if !imagePattern.MatchString(ref) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid locked image",
				Detail:   fmt.Sprintf("%q is not an image reference (written like \"nvcr.io/nvidia/pytorch:24.05-py3\"). Run gpuform lock to rewrite the lock file.", ref),
				Subject:  b.LabelRanges[0].Ptr(),
			})
			continue
		}
		ic, d := b.Body.Content(lockImageSchema)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		pin := ImagePin{Platforms: map[string]PlatformPin{}}
		var ok bool
		pin.Digest, pin.Range, ok = lockDigest(ic.Attributes["digest"], &diags)
		if !ok {
			continue
		}
		if want := ImageDigest(ref); want != "" && want != pin.Digest {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid locked image",
				Detail:   fmt.Sprintf("%s names digest %s itself, but the lock file records %s. Run gpuform lock to rewrite the lock file.", ref, want, pin.Digest),
				Subject:  pin.Range.Ptr(),
			})
			continue
		}
		for _, pb := range ic.Blocks {
			if !platformPattern.MatchString(pb.Labels[0]) {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid locked image platform",
					Detail:   fmt.Sprintf("%q is not a platform (written \"os/arch\", like \"linux/amd64\"). Run gpuform lock to rewrite the lock file.", pb.Labels[0]),
					Subject:  pb.LabelRanges[0].Ptr(),
				})
				continue
			}
			pc, d := pb.Body.Content(lockPlatformSchema)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			dg, _, ok := lockDigest(pc.Attributes["digest"], &diags)
			if !ok {
				continue
			}
			pp := PlatformPin{Digest: dg}
			if a := pc.Attributes["size"]; a != nil {
				v, d := a.Expr.Value(nil)
				diags = append(diags, d...)
				n, err := convert.Convert(v, cty.Number)
				var size int64
				if err == nil && !n.IsNull() && n.IsKnown() {
					f := n.AsBigFloat()
					var acc big.Accuracy
					if f.IsInt() && f.Sign() >= 0 {
						size, acc = f.Int64()
					}
					if !f.IsInt() || f.Sign() < 0 || acc != big.Exact {
						err = fmt.Errorf("not a whole number of bytes")
					}
				}
				if err != nil || n.IsNull() {
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid locked image size", Detail: "A size is a whole number of bytes. Run gpuform lock to rewrite the lock file.", Subject: a.Expr.Range().Ptr()})
					continue
				}
				pp.Size = size
			}
			pin.Platforms[pb.Labels[0]] = pp
		}
		if pins == nil {
			pins = map[string]ImagePin{}
		}
		pins[ref] = pin
	}
	return pins, lockAttributes(body), diags
}

// lockAttributes are a lock file node body's attributes, whatever their
// names: the component pins, which ParseLockFile checks one by one.
// hclsyntax's JustAttributes refuses a body with blocks even after
// PartialContent took them, so the syntax body is read directly.
func lockAttributes(body hcl.Body) hcl.Attributes {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		attrs, _ := body.JustAttributes()
		return attrs
	}
	out := hcl.Attributes{}
	for name, a := range sb.Attributes {
		out[name] = a.AsHCLAttribute()
	}
	return out
}

// lockDigest reads a digest attribute of the lock file.
func lockDigest(a *hcl.Attribute, diags *hcl.Diagnostics) (string, hcl.Range, bool) {
	s, d := literalString(a)
	*diags = append(*diags, d...)
	if d.HasErrors() {
		return "", hcl.Range{}, false
	}
	if !ValidDigest(s) {
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid locked digest",
			Detail:   fmt.Sprintf("%q is not a sha256 digest (\"sha256:\" and 64 hexadecimal digits). Run gpuform lock to rewrite the lock file.", s),
			Subject:  a.Expr.Range().Ptr(),
		})
		return "", hcl.Range{}, false
	}
	return s, a.Expr.Range(), true
}

// formatLockImages appends a node's image blocks, sorted by reference.
func formatLockImages(b *hclwrite.Body, pins map[string]ImagePin) {
	for i, ref := range slices.Sorted(maps.Keys(pins)) {
		pin := pins[ref]
		if i > 0 || len(b.Attributes()) > 0 {
			b.AppendNewline()
		}
		ib := b.AppendNewBlock("image", []string{ref}).Body()
		ib.SetAttributeValue("digest", cty.StringVal(pin.Digest))
		for _, p := range slices.Sorted(maps.Keys(pin.Platforms)) {
			pp := pin.Platforms[p]
			pb := ib.AppendNewBlock("platform", []string{p}).Body()
			pb.SetAttributeValue("digest", cty.StringVal(pp.Digest))
			if pp.Size > 0 {
				pb.SetAttributeValue("size", cty.NumberIntVal(pp.Size))
			}
		}
	}
}

// Image returns the pin the lock records for a node's image reference.
func (l *Lock) Image(node, ref string) (ImagePin, bool) {
	if l == nil {
		return ImagePin{}, false
	}
	p, ok := l.Images[node][ref]
	return p, ok
}

// applyImageLock gives a node's container block the digests the lock
// records for its images, so that plan pulls and verify checks exactly
// them. A reference that names its digest itself needs no lock entry.
func applyImageLock(n *Node, l *Lock) {
	if n.Container == nil {
		return
	}
	for _, img := range n.Container.Images {
		pin, ok := l.Image(n.Name, img.V)
		if !ok {
			continue
		}
		if n.Container.Pins == nil {
			n.Container.Pins = map[string]ImagePin{}
		}
		n.Container.Pins[img.V] = pin
	}
}
