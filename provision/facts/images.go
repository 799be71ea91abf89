package facts

import (
	"sort"
	"strings"
)

// Container runtimes whose image stores the probe lists, as
// spec container.runtime names them.
const (
	RuntimeDocker     = "docker"
	RuntimeContainerd = "containerd"
)

// ImageStore is what one container runtime on the node holds.
type ImageStore struct {
	// Error says why the store could not be listed (the daemon is down,
	// the probe's user may not talk to it); Images is then empty.
	Error string `json:"error,omitempty"`
	// NotRun says why the store was not asked from where the probe ran
	// (under a host root: no client of the runtime on this machine, or
	// the node's /run not visible there): it is not known, neither
	// absent nor empty. Images is then empty.
	NotRun string `json:"not_run,omitempty"`
	// Images are the images the store holds, sorted by ID.
	Images []LocalImage `json:"images"`
	// NotLinks are the paths, sorted, in an image directory that carry a
	// tag link's name (ImageLinkName) but are regular files: someone
	// else's, which gpuform must not replace with its link.
	NotLinks []string `json:"not_links,omitempty"`
}

// BundleImage is one image of an offline bundle, as a node loads it: its
// blobs, copied to Dir on the node before the steps, and the index.json
// that names it repository@digest for the runtime's import.
type BundleImage struct {
	// Missing, when not empty, says why the bundle cannot give the node
	// this image (it holds no such image for the node's platform); the
	// other fields are then empty.
	Missing string `json:"missing,omitempty"`
	// Bundle is the bundle's path where gpuform runs, for messages.
	Bundle string `json:"bundle"`
	// Dir is the OCI image layout's directory on the node.
	Dir string `json:"dir"`
	// Name is repository@digest, the digest the lock pins.
	Name string `json:"name"`
	// Index is the image's index.json: one descriptor, of Name's digest.
	Index string `json:"index"`
	// Blobs are the sha256 (hex) of every blob the image needs on the
	// node: the pinned manifest (an index), the platform's manifest, its
	// config and layers.
	Blobs []string `json:"blobs"`
	// Size is the blobs' bytes (the image file's, for enroot).
	Size int64 `json:"size"`
	// File is, for enroot, the image file under Dir
	// ("enroot/SHA256.sqsh", named by its sha256) the node copies into
	// image_dir; Index and Blobs are then empty.
	File string `json:"file,omitempty"`
}

// LocalImage is one image in a runtime's store.
type LocalImage struct {
	// ID identifies the image in the store: Docker's image ID, or for
	// containerd the digest its references point to.
	ID string `json:"id"`
	// Tags are the "repository:tag" references that point to it.
	Tags []string `json:"tags,omitempty"`
	// Digests are the "repository@sha256:…" references it was pulled by:
	// the registry manifest digests it is known under.
	Digests []string `json:"digests,omitempty"`
	// Unverified marks an image file (enroot, Apptainer) that gpuform did
	// not pull on this node, or that changed since it did: its name says
	// a digest, but nothing proves its content is that build.
	Unverified bool `json:"unverified,omitempty"`
	// ContentSHA256 is, for an image file gpuform pulled on this node and
	// that kept its identity, the sha256 (hex) of its content that
	// ImageFilesLedger recorded right after the pull; "" when the ledger
	// entry predates recorded hashes. verify -tier full hashes the file
	// again and compares.
	ContentSHA256 string `json:"content_sha256,omitempty"`
}

// images reads the runtimes' listings: "docker image ls --digests" rows
// (ID REPOSITORY TAG DIGEST, "<none>" for a missing part) and "ctr images
// ls" rows (REF TYPE DIGEST …, after a header).
func (p *interpreter) images() {
	for client, runtime := range map[string]string{"docker": RuntimeDocker, "ctr": RuntimeContainerd} {
		if c, ok := p.raw.cmds[client+"-images-notrun"]; ok {
			p.setStore(runtime, &ImageStore{Images: []LocalImage{}, NotRun: firstLineOr(c.out, "the "+runtime+" images were not asked")})
		}
	}
	if c, ok := p.raw.cmds["docker-images"]; ok {
		s := &ImageStore{Images: []LocalImage{}}
		if c.rc != 0 {
			s.Error = firstLineOr(c.out, "docker image ls failed")
		} else {
			byID := map[string]*LocalImage{}
			for _, line := range strings.Split(c.out, "\n") {
				f := strings.Fields(line)
				if len(f) != 4 {
					continue
				}
				im := localImage(byID, f[0])
				if f[1] != "<none>" && f[2] != "<none>" {
					im.Tags = appendNew(im.Tags, f[1]+":"+f[2])
				}
				if f[1] != "<none>" && strings.HasPrefix(f[3], "sha256:") {
					im.Digests = appendNew(im.Digests, f[1]+"@"+f[3])
				}
			}
			s.Images = sortedImages(byID)
		}
		p.setStore(RuntimeDocker, s)
	}
	if c, ok := p.raw.cmds["ctr-images"]; ok {
		s := &ImageStore{Images: []LocalImage{}}
		if c.rc != 0 {
			s.Error = firstLineOr(c.out, "ctr images ls failed")
		} else {
			byID := map[string]*LocalImage{}
			for i, line := range strings.Split(c.out, "\n") {
				f := strings.Fields(line)
				if i == 0 || len(f) < 3 || !strings.HasPrefix(f[2], "sha256:") {
					continue
				}
				im := localImage(byID, f[2])
				if repo, d, ok := strings.Cut(f[0], "@"); ok {
					im.Digests = appendNew(im.Digests, repo+"@"+d)
				} else {
					im.Tags = appendNew(im.Tags, f[0])
					// containerd stores the digest a tag was pulled at
					// as the image's target: the repository is known
					// under it.
					if i := strings.LastIndexByte(f[0], ':'); i > strings.LastIndexByte(f[0], '/') {
						im.Digests = appendNew(im.Digests, f[0][:i]+"@"+f[2])
					}
				}
			}
			s.Images = sortedImages(byID)
		}
		p.setStore(RuntimeContainerd, s)
	}
}

func (p *interpreter) setStore(runtime string, s *ImageStore) {
	if p.n.Images == nil {
		p.n.Images = map[string]*ImageStore{}
	}
	p.n.Images[runtime] = s
}

func localImage(byID map[string]*LocalImage, id string) *LocalImage {
	im := byID[id]
	if im == nil {
		im = &LocalImage{ID: id}
		byID[id] = im
	}
	return im
}

func sortedImages(byID map[string]*LocalImage) []LocalImage {
	out := make([]LocalImage, 0, len(byID))
	for _, im := range byID {
		sort.Strings(im.Tags)
		sort.Strings(im.Digests)
		out = append(out, *im)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func appendNew(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

func firstLineOr(s, fallback string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return fallback
	}
	return s
}
