package bundle

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/gpuform/gpuform/internal/readlimit"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/transport"
)

// NodeImagesDir is where a node keeps the image blobs apply copied from
// a bundle: an OCI layout's blobs/sha256, shared by every image.
const NodeImagesDir = NodeDir + "/images"

// maxImageManifest bounds an image manifest or index read from the
// bundle's layout (registries refuse manifests over 4 MiB).
const maxImageManifest = 4 << 20

// ImageName is the name a runtime keeps an image loaded by digest under:
// the repository as containerd names it (Docker Hub's as
// docker.io/library/…) @ the digest.
func ImageName(repo, digest string) string {
	r, err := name.NewRepository(repo)
	if err != nil {
		return repo + "@" + digest
	}
	if r.RegistryStr() == name.DefaultRegistry {
		return "docker.io/" + r.RepositoryStr() + "@" + digest
	}
	return r.Name() + "@" + digest
}

// LoadImage is what a node needs to load the image ref of node block
// node, pinned to digest (the lock's, an index's where the lock pins
// one), for platform: the blobs, each a file of the manifest whose
// sha256 is its name, and the index.json that names it repo@digest.
// Where the bundle cannot give it, Missing says why. The bundle's files
// are checked against the manifest (Verify) before this reads them.
func (m *Manifest) LoadImage(dir, node, ref, repo, digest, platform string) *facts.BundleImage {
	out := &facts.BundleImage{Bundle: dir, Dir: NodeImagesDir, Name: ImageName(repo, digest)}
	missing := func(format string, a ...any) *facts.BundleImage {
		return &facts.BundleImage{Bundle: dir, Missing: fmt.Sprintf(format, a...)}
	}
	var im *Image
	for i := range m.Images {
		if m.Images[i].Node == node && m.Images[i].Ref == ref && m.Images[i].Platform == platform {
			im = &m.Images[i]
		}
	}
	if im == nil {
		return missing("the bundle %s holds no %s image of %s for node %q: build it again with gpuform bundle (after gpuform lock)", dir, platform, ref, node)
	}
	_, platDigest, _ := strings.Cut(im.Name, "@")
	blob := func(d string) (File, error) {
		hexd, ok := strings.CutPrefix(d, "sha256:")
		if !ok {
			return File{}, fmt.Errorf("%s is not a sha256 digest", d)
		}
		p := ImagesDir + "/blobs/sha256/" + hexd
		f, ok := m.File(p)
		if !ok {
			return File{}, fmt.Errorf("its blob %s is not in the bundle's manifest", d)
		}
		if f.SHA256 != hexd {
			return File{}, fmt.Errorf("the manifest gives the blob %s the sha256 %s: a blob's sha256 is its name", p, f.SHA256)
		}
		return f, nil
	}
	read := func(d string) ([]byte, error) {
		if _, err := blob(d); err != nil {
			return nil, err
		}
		return readlimit.ReadRegularFile(filepath.Join(dir, ImagesDir, "blobs", "sha256", strings.TrimPrefix(d, "sha256:")), maxImageManifest)
	}
	add := func(d string) error {
		f, err := blob(d)
		if err != nil {
			return err
		}
		out.Blobs = append(out.Blobs, f.SHA256)
		out.Size += f.Size
		return nil
	}
	top := platDigest
	if digest != platDigest {
		top = digest
	}
	raw, err := read(top)
	if err != nil {
		return missing("the bundle %s cannot give %s (%s) at %s: %v; build it again with gpuform bundle", dir, ref, platform, top, err)
	}
	var head struct {
		MediaType string     `json:"mediaType"`
		Manifests []digested `json:"manifests"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return missing("the bundle %s: the manifest %s of %s: %v", dir, top, ref, err)
	}
	if top != platDigest {
		found := false
		for _, c := range head.Manifests {
			found = found || c.Digest == platDigest
		}
		if !found {
			return missing("the bundle %s: the index %s of %s does not list its %s image %s", dir, top, ref, platform, platDigest)
		}
		if err := add(top); err != nil {
			return missing("the bundle %s: %s: %v", dir, ref, err)
		}
	}
	pm, err := read(platDigest)
	if err != nil {
		return missing("the bundle %s cannot give %s (%s): %v", dir, ref, platform, err)
	}
	var man struct {
		Config digested   `json:"config"`
		Layers []digested `json:"layers"`
	}
	if err := json.Unmarshal(pm, &man); err != nil || man.Config.Digest == "" {
		return missing("the bundle %s: the manifest %s of %s is not an image manifest (%v)", dir, platDigest, ref, err)
	}
	for _, d := range append([]string{platDigest, man.Config.Digest}, layerDigests(man.Layers)...) {
		if err := add(d); err != nil {
			return missing("the bundle %s: %s (%s): %v", dir, ref, platform, err)
		}
	}
	mt := head.MediaType
	if mt == "" {
		mt = "application/vnd.oci.image.manifest.v1+json"
		if top != platDigest {
			mt = "application/vnd.oci.image.index.v1+json"
		}
	}
	idx, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []map[string]any{{
			"mediaType":   mt,
			"digest":      top,
			"size":        len(raw),
			"annotations": map[string]string{"io.containerd.image.name": out.Name},
		}},
	})
	if err != nil {
		return missing("%v", err)
	}
	out.Index = string(idx) + "\n"
	return out
}

// digested is a descriptor's digest, all LoadImage reads of one.
type digested struct {
	Digest string `json:"digest"`
}

func layerDigests(ls []digested) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Digest
	}
	return out
}

// StageImages copies the blobs of ims (and enroot's image files) to the
// node's NodeImagesDir, only
// those it lacks (or holds with another sha256: a copy cut short is
// copied again), each verified by its sha256 on the node before it is
// renamed into place. It returns the blobs copied and those kept.
func StageImages(ctx context.Context, tr transport.Transport, become bool, dir string, ims []*facts.BundleImage) (copied, kept []string, err error) {
	sums := map[string]string{}
	var names []string
	add := func(name, sum string) {
		if _, ok := sums[name]; !ok {
			sums[name] = sum
			names = append(names, name)
		}
	}
	for _, im := range ims {
		for _, b := range im.Blobs {
			add("blobs/sha256/"+b, b)
		}
		// An enroot image file is named by its sha256 (LoadEnroot).
		if im.File != "" {
			add(im.File, strings.TrimSuffix(path.Base(im.File), ".sqsh"))
		}
	}
	if len(names) == 0 {
		return nil, nil, nil
	}
	// The blobs' names go on standard input, as the repository's do: an
	// image of many layers must not meet the bound on one command line.
	have, err := nodeHas(ctx, tr, become, NodeImagesDir, names)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range names {
		sum := sums[n]
		if have[n] == sum {
			kept = append(kept, n)
			continue
		}
		fh, err := os.Open(filepath.Join(dir, ImagesDir, filepath.FromSlash(n)))
		if err != nil {
			return nil, nil, err
		}
		_, err = run(ctx, tr, become, stagePutScript, []string{NodeImagesDir, n, sum}, fh, "copy "+ImagesDir+"/"+n)
		fh.Close()
		if err != nil {
			return nil, nil, err
		}
		copied = append(copied, n)
	}
	return copied, kept, nil
}
