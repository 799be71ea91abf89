package spec

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// LockFileName is the lock file in a spec directory, committed with it.
const LockFileName = ".gpuform.lock.hcl"

// Lock is the content of a lock file: the exact release of every versioned
// component of every node, so a spec that says "580" installs the same
// 580.x.y on every host until the lock file is updated.
type Lock struct {
	// Nodes maps a node name to component → exact version.
	Nodes map[string]map[Component]Attr[Version]
	// Images maps a node name to image reference (as the spec writes it)
	// → the digests it resolved to.
	Images map[string]map[string]ImagePin
}

// Pinned returns the exact version locked for a node's component.
func (l *Lock) Pinned(node string, component Component) (Version, bool) {
	if l == nil {
		return Version{}, false
	}
	v, ok := l.Nodes[node][component]
	return v.V, ok
}

var lockFileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "node", LabelNames: []string{"name"}}},
}

// LoadLockFile reads a lock file. A missing file is not an error: it
// returns nil, nil, nil.
func LoadLockFile(path string) (*Lock, *hcl.File, hcl.Diagnostics) {
	src, err := readSpecFile(path)
	if os.IsNotExist(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read lock file", Detail: err.Error()}}
	}
	return ParseLockFile(src, path)
}

// ParseLockFile reads a lock file's source; filename is used in
// diagnostics.
func ParseLockFile(src []byte, filename string) (*Lock, *hcl.File, hcl.Diagnostics) {
	path := filename
	if d := CheckNesting(src, path); d.HasErrors() {
		return nil, nil, d
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if f == nil || diags.HasErrors() {
		return nil, f, diags
	}
	bounds(f.Body)
	content, d := f.Body.Content(lockFileSchema)
	diags = append(diags, d...)
	lock := &Lock{Nodes: map[string]map[Component]Attr[Version]{}}
	first := map[string]hcl.Range{}
	for _, b := range content.Blocks {
		name := b.Labels[0]
		if prev, dup := first[name]; dup {
			d := duplicateDiag("node", name, b.LabelRanges[0], prev)
			d.Detail = fmt.Sprintf("The lock file already has a node %q block at %s. Run gpuform lock to rewrite the file.", name, prev)
			diags = append(diags, d)
			continue
		}
		first[name] = b.DefRange
		// A lock file records spec nodes, whose names are identifiers. A
		// label that is not one came from a hand edit or a bad merge; it
		// also need not survive a rewrite (HCL normalises literal text to
		// NFC but not \u escapes), so it is refused rather than kept.
		if d := checkName("node", name, b.LabelRanges[0]); d != nil {
			d.Detail += " Run gpuform lock to rewrite the lock file."
			diags = append(diags, d)
			continue
		}
		images, attrs, d := decodeLockImages(b.Body)
		diags = append(diags, d...)
		if images != nil {
			if lock.Images == nil {
				lock.Images = map[string]map[string]ImagePin{}
			}
			lock.Images[name] = images
		}
		pins := map[Component]Attr[Version]{}
		for _, k := range slices.Sorted(maps.Keys(attrs)) {
			a := attrs[k]
			comp, ok := ParseComponent(k)
			if !ok {
				names := componentNames()
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Unsupported argument",
					Detail:   fmt.Sprintf("A lock file pins %s; %q is not one of them.%s", strings.Join(names, ", "), k, didYouMeanSuffix(k, names)),
					Subject:  a.NameRange.Ptr(),
				})
				continue
			}
			s, d := literalString(a)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			v, err := ParseVersion(s)
			if err == nil && len(v.Parts) < 2 {
				err = fmt.Errorf("%q is a branch, not an exact release", s)
			}
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid locked version",
					Detail:   err.Error() + ". Run gpuform lock to rewrite the lock file.",
					Subject:  a.Expr.Range().Ptr(),
				})
				continue
			}
			pins[comp] = Attr[Version]{V: v, Set: true, Range: a.Expr.Range()}
		}
		lock.Nodes[name] = pins
	}
	return lock, f, diags
}

// FormatLock renders a lock file canonically: nodes and components sorted,
// so that re-locking an unchanged fleet produces no diff.
func FormatLock(l *Lock) []byte {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	body.AppendUnstructuredTokens(hclwrite.Tokens{
		{Type: hclsyntax.TokenComment, Bytes: []byte("# This file is maintained by \"gpuform lock\". Commit it with the spec;\n# it records the exact releases each node runs.\n")},
	})
	names := make([]string, 0, len(l.Nodes))
	for n := range l.Nodes {
		names = append(names, n)
	}
	for n := range l.Images {
		if _, ok := l.Nodes[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		body.AppendNewline()
		b := body.AppendNewBlock("node", []string{n}).Body()
		for _, c := range Components() {
			if v, ok := l.Nodes[n][c]; ok {
				b.SetAttributeValue(c.LockName(), cty.StringVal(v.V.Raw))
			}
		}
		formatLockImages(b, l.Images[n])
	}
	return hclwrite.Format(f.Bytes())
}

// ExactParts is how many numeric parts make a version an exact release
// ("580.95.05", "12.8.1", "2.25.1"); fewer is a floating branch or series.
const ExactParts = 3

// IsExact reports whether v names one release rather than a branch.
func (v Version) IsExact() bool { return len(v.Parts) >= ExactParts }

// Within reports whether v lies inside the branch or series b: "580.95.05"
// is within "580", "12.8.1" within "12.8".
func (v Version) Within(b Version) bool {
	if len(b.Parts) > len(v.Parts) {
		return false
	}
	for i, p := range b.Parts {
		if v.Parts[i] != p {
			return false
		}
	}
	return true
}

// NodeVersions returns the versioned components a node pins, by lock-file
// component name, with the attribute that sets each.
func NodeVersions(n *Node) map[Component]*Attr[Version] {
	out := map[Component]*Attr[Version]{}
	if n.Driver != nil && n.Driver.Version.Set {
		out[ComponentDriver] = &n.Driver.Version
	}
	if n.CUDA != nil && n.CUDA.Version.Set {
		out[ComponentCUDA] = &n.CUDA.Version
	}
	if n.NCCL != nil && n.NCCL.Version.Set {
		out[ComponentNCCL] = &n.NCCL.Version
	}
	if n.DCGM != nil && n.DCGM.Version.Set {
		out[ComponentDCGM] = &n.DCGM.Version
	}
	if n.Container != nil && n.Container.NvidiaContainerToolkit.Set {
		out[ComponentContainerToolkit] = &n.Container.NvidiaContainerToolkit
	}
	if c := n.Container; c != nil {
		for comp, a := range map[Component]*Attr[Version]{ComponentEnroot: &c.EnrootVersion, ComponentPyxis: &c.PyxisVersion, ComponentApptainer: &c.ApptainerVersion} {
			if a.Set {
				out[comp] = a
			}
		}
	}
	return out
}

// ApplyLock replaces every floating version in the config's nodes by the
// release the lock file records, so plan and apply install exactly what was
// locked. A pin outside the spec's branch (the spec moved from "570" to
// "580" since the lock was written) is an error at the spec's attribute.
// Exact versions in the spec are left alone: the spec wins, with a warning
// when the lock file pins another release, since reviewers read version
// bumps in the lock file's diff and would miss this one.
func ApplyLock(cfg *Config, l *Lock) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if l == nil {
		return nil
	}
	for _, n := range cfg.Nodes {
		applyImageLock(n, l)
		versions := NodeVersions(n)
		for _, comp := range slices.Sorted(maps.Keys(versions)) {
			a := versions[comp]
			if a.V.IsExact() {
				if pin, ok := l.Nodes[n.Name][comp]; ok && pin.V.Raw != a.V.Raw {
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagWarning,
						Summary:  "Lock file is out of date",
						Detail:   fmt.Sprintf("The lock file pins %s %s for node %q, but the spec asks for exactly %s; gpuform uses %s. Run gpuform lock so the lock file says so too.", comp, pin.V, n.Name, a.V, a.V),
						Subject:  a.Range.Ptr(),
					})
				}
				continue
			}
			pin, ok := l.Nodes[n.Name][comp]
			if !ok {
				continue
			}
			if !pin.V.Within(a.V) {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Lock file is out of date",
					Detail:   fmt.Sprintf("The lock file pins %s %s for node %q, which is not a release of %s as the spec now asks. Run gpuform lock -upgrade to lock the newest release of %s the hosts' package repositories offer (the next apply installs it), or gpuform lock once the hosts run one.", comp, pin.V, n.Name, a.V, a.V),
					Subject:  a.Range.Ptr(),
				})
				continue
			}
			a.V = pin.V
		}
	}
	return diags
}
