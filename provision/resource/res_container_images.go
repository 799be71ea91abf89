package resource

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/spec"
)

// imageRepoPattern and imageTagPattern are what an image's repository and
// tag may be before they are quoted into a pull script: the spec's own
// pattern, split.
var (
	imageRepoPattern   = lazyre.New(`^[a-z0-9.\-]+(:[0-9]+)?(/[a-z0-9._\-]+)+$`)
	imageTagPattern    = lazyre.New(`^[A-Za-z0-9._\-]{1,128}$`)
	imageDigestPattern = lazyre.New(`^sha256:[a-f0-9]{64}$`)
	imageDirPattern    = lazyre.New(`^(/[A-Za-z0-9._\-]+)+$`)
)

// ImageRef is a container image of the spec as a node pulls it.
type ImageRef struct {
	// Ref is the reference as the spec writes it.
	Ref string
	// Repo is the repository ("nvcr.io/nvidia/pytorch").
	Repo string
	// Tag is the tag the spec names, "" when it names only a digest.
	Tag string
	// Digest is the digest the node must hold: the lock file's, or the
	// one the reference names itself.
	Digest string
	// Pin is the lock file's record; zero when the reference names its
	// digest and the lock has none.
	Pin spec.ImagePin
}

// PinnedImages returns the images of node n with the digest each is
// pinned to, in the spec's order, and the references that are pinned to
// nothing yet (a tag the lock file does not record).
func PinnedImages(n *spec.Node) (pinned []ImageRef, unlocked []string) {
	if n.Container == nil {
		return nil, nil
	}
	for _, img := range n.Container.Images {
		ref := img.V
		base, own, _ := strings.Cut(ref, "@")
		r := ImageRef{Ref: ref, Repo: base, Digest: own}
		if i := strings.LastIndexByte(base, ':'); i > strings.LastIndexByte(base, '/') {
			r.Repo, r.Tag = base[:i], base[i+1:]
		}
		if pin, ok := n.Container.Pins[ref]; ok {
			r.Pin, r.Digest = pin, pin.Digest
		}
		if r.Digest == "" {
			unlocked = append(unlocked, ref)
			continue
		}
		pinned = append(pinned, r)
	}
	return pinned, unlocked
}

// ImageRuntime is the runtime whose store holds node n's images.
func ImageRuntime(n *spec.Node) string {
	if n.Container != nil {
		switch rt := n.Container.Runtime.V; rt {
		case facts.RuntimeContainerd, facts.RuntimeEnroot, facts.RuntimeApptainer:
			return rt
		}
	}
	return facts.RuntimeDocker
}

// NodeImages is the store of f that holds node n's images: the runtime's,
// and for enroot and Apptainer only the files in the spec's image_dir (a
// file gpuform pulled into another directory is no image of this spec).
func NodeImages(n *spec.Node, f *facts.Node) *facts.ImageStore {
	rt := ImageRuntime(n)
	s := f.Images[rt]
	if s == nil || !fileRuntime(rt) {
		return s
	}
	out := &facts.ImageStore{Error: s.Error, Images: []facts.LocalImage{}}
	for _, im := range s.Images {
		// A file gpuform did not pull on this node (or that changed
		// since) is no image of the spec, whatever its name says, unless
		// the spec says image_dir is shared storage, where another node
		// pulled it.
		if im.Unverified && !n.Container.ImageDirShared.V {
			continue
		}
		if n.Container.ImageDir.Set && path.Dir(im.ID) == n.Container.ImageDir.V {
			out.Images = append(out.Images, im)
		}
	}
	for _, p := range s.NotLinks {
		if n.Container.ImageDir.Set && path.Dir(p) == n.Container.ImageDir.V {
			out.NotLinks = append(out.NotLinks, p)
		}
	}
	return out
}

// NodeFile is the file of store (NodeImages') under im's digest name in
// n's image_dir, or nil.
func NodeFile(n *spec.Node, store *facts.ImageStore, im ImageRef) *facts.LocalImage {
	if store == nil || n.Container == nil || !n.Container.ImageDir.Set {
		return nil
	}
	want := path.Join(n.Container.ImageDir.V, facts.ImageFileName(im.Repo, im.Digest, ImageRuntime(n)))
	for i := range store.Images {
		if store.Images[i].ID == want {
			return &store.Images[i]
		}
	}
	return nil
}

// NodeFileUnhashed says whether im's file in image_dir is one gpuform
// pulled whose ledger entry records no content hash (an older gpuform).
func NodeFileUnhashed(n *spec.Node, store *facts.ImageStore, im ImageRef) bool {
	li := NodeFile(n, store, im)
	return li != nil && !li.Unverified && li.ContentSHA256 == ""
}

// fileRuntime says whether rt keeps images as files in image_dir.
func fileRuntime(rt string) bool {
	return rt == facts.RuntimeEnroot || rt == facts.RuntimeApptainer
}

// NodeDigest is the digest the node's store holds for r: for a tag, the
// digest of the image the tag points to (the pinned one when that image is
// known under it), for a digest-only reference the digest itself when the
// store has it; "" when the store has nothing for r.
func NodeDigest(s *facts.ImageStore, r ImageRef) string {
	if s == nil {
		return ""
	}
	repo := normalRepo(r.Repo)
	for _, im := range s.Images {
		var digests []string
		for _, d := range im.Digests {
			if dr, dd, ok := strings.Cut(d, "@"); ok && normalRepo(dr) == repo {
				digests = append(digests, dd)
			}
		}
		if r.Tag == "" {
			if slices.Contains(digests, r.Digest) {
				return r.Digest
			}
			continue
		}
		tagged := false
		for _, t := range im.Tags {
			if i := strings.LastIndexByte(t, ':'); i > 0 && normalRepo(t[:i]) == repo && t[i+1:] == r.Tag {
				tagged = true
			}
		}
		if !tagged {
			continue
		}
		if slices.Contains(digests, r.Digest) || len(digests) == 0 {
			// An image tagged locally and known by no digest of the
			// repository was built or loaded on the node, not pulled.
			if len(digests) == 0 {
				return "(built on the node)"
			}
			return r.Digest
		}
		return digests[0]
	}
	return ""
}

// normalRepo names a repository the way registries do, so that Docker's
// "nvidia/cuda" and the spec's "docker.io/nvidia/cuda" compare equal.
func normalRepo(repo string) string {
	r, err := name.NewRepository(repo)
	if err != nil {
		return repo
	}
	return r.Name()
}

// containerImagesReads declares what container_images reads back on a
// node: nothing through a file of its own. The image stores, and the image
// files and ledger in /etc/gpuform, are node facts the probe always reads
// (facts.Node.Images).
func containerImagesReads() facts.Reads { return facts.Reads{} }

// buildContainerImages pre-pulls every pinned image of the spec onto the
// node, by digest, with the node's runtime.
func buildContainerImages(in *buildInput) ([]Resource, []string, error) {
	pinned, unlocked := PinnedImages(in.n)
	var warnings []string
	for _, ref := range unlocked {
		warnings = append(warnings, fmt.Sprintf("container image %s: unpinned, not pulled: the lock file records no digest for it (lock -images=false leaves a tag unpinned); run gpuform lock where its registry can be reached, or name its digest in the spec", ref))
	}
	if len(pinned) == 0 {
		return nil, warnings, nil
	}
	rt := ImageRuntime(in.n)
	dir := in.n.Container.ImageDir
	if fileRuntime(rt) && !dir.Set {
		return nil, append(warnings, fmt.Sprintf("container images: not pulled, runtime %s keeps images as files; set image_dir to the directory they belong in", rt)), nil
	}
	if dir.Set {
		if err := check(imageDirPattern, "image directory", dir.V); err != nil {
			return nil, nil, err
		}
	}
	for _, r := range pinned {
		if err := check(imageRepoPattern, "image repository", r.Repo); err != nil {
			return nil, nil, err
		}
		if err := check(imageDigestPattern, "image digest", r.Digest); err != nil {
			return nil, nil, err
		}
		if r.Tag != "" {
			if err := check(imageTagPattern, "image tag", r.Tag); err != nil {
				return nil, nil, err
			}
		}
	}
	return []Resource{&imagesResource{
		base:    base{name: ContainerImages, deps: []string{ContainerToolkit, DockerDaemon, EnrootPackage, EnrootConf, ApptainerPackage, ApptainerConf}},
		images:  pinned,
		runtime: rt,
		dir:     dir.V,
		shared:  in.n.Container.ImageDirShared.V,
		spec:    in.n,
	}}, warnings, nil
}

// imagesResource is the images a node holds for its spec: one attribute
// per reference, its digest (with the download size the lock recorded for
// the node's platform, so plan shows what a pull costs).
type imagesResource struct {
	base
	images  []ImageRef
	runtime string
	// dir is image_dir, for enroot and Apptainer.
	dir string
	// shared is image_dir_shared: the directory is shared storage.
	shared bool
	spec   *spec.Node
}

func (r *imagesResource) Diff(f *facts.Node) (Change, error) {
	platform := spec.Platform(f.Arch)
	store := NodeImages(r.spec, f)
	value := func(im ImageRef, digest string) string {
		if digest != im.Digest {
			return digest
		}
		if p, ok := im.Pin.Platforms[platform]; ok && p.Size > 0 {
			return fmt.Sprintf("%s (%s)", digest, ImageSize(p.Size))
		}
		return digest
	}
	if fileRuntime(r.runtime) && !r.shared {
		if err := judgeImageDir(r.dir, f.ImageDirTrust); err != nil {
			return Change{}, fmt.Errorf("%s: %w", r.name, err)
		}
	}
	before, after := Values{}, Values{}
	for _, im := range r.images {
		if fileRuntime(r.runtime) && im.Tag != "" && store != nil {
			link := path.Join(r.dir, facts.ImageLinkName(im.Repo, im.Tag, r.runtime))
			if slices.Contains(store.NotLinks, link) {
				return Change{}, fmt.Errorf("%s: %s is a regular file, not the tag's link gpuform makes; gpuform replaces no file it did not write: move it away (or to its digest's name, %s, if it is that build), then plan again", r.name, link, facts.ImageFileName(im.Repo, im.Digest, r.runtime))
			}
		}
		after[im.Ref] = StringVal(value(im, im.Digest))
		if b := f.BundleImages[im.Ref]; b != nil && b.Missing == "" {
			after[im.Ref] = StringVal(fmt.Sprintf("%s (load from bundle, %s)", im.Digest, ImageSize(b.Size)))
		}
		// A file an older gpuform recorded without its content hash is
		// pulled again, so that verify -tier full can check its content.
		if fileRuntime(r.runtime) && !r.shared && NodeFileUnhashed(r.spec, store, im) {
			continue
		}
		if d := NodeDigest(store, im); d == im.Digest {
			before[im.Ref] = after[im.Ref]
		} else if d != "" {
			before[im.Ref] = StringVal(value(im, d))
		}
	}
	b := before
	if len(before) == 0 {
		b = nil
	}
	c := r.change(b, after)
	for _, ref := range slices.Sorted(maps.Keys(after)) {
		if before[ref] == after[ref] {
			continue
		}
		for _, im := range r.images {
			if im.Ref != ref {
				continue
			}
			if f.BundleImages == nil {
				c.Steps = append(c.Steps, r.pull(im, after[ref].Text))
				continue
			}
			st, err := r.load(im, f.BundleImages[ref], platform)
			if err != nil {
				return Change{}, fmt.Errorf("%s: %w", r.name, err)
			}
			c.Steps = append(c.Steps, st...)
		}
	}
	return c, nil
}

// pull is one image's step: pull by digest, then point the spec's tag at
// it, so that a job that runs the tag gets the pinned build without a
// pull of its own. The runtime pulls with the credentials configured on
// the node (root's Docker config, containerd's registry configuration);
// gpuform sends none.
func (r *imagesResource) pull(im ImageRef, what string) Step {
	if fileRuntime(r.runtime) {
		return r.pullFile(im, what)
	}
	tagged := ""
	if im.Tag != "" {
		tagged = im.Repo + ":" + im.Tag
	}
	return Step{
		Description: fmt.Sprintf("pull %s at %s with %s", im.Ref, what, r.runtime),
		Script:      nodesh.Script(imagePullScript, []string{r.runtime, im.Repo + "@" + im.Digest, tagged}),
		Become:      true,
		Check:       imageReachableCheck(im, r.runtime),
	}
}

// load is one image's step with an offline bundle (plan and apply
// -bundle): apply has copied its blobs to the node (b.Dir) before the
// steps; the step hashes each again and loads them with the runtime's
// own tool, by digest, then points the spec's tag at it, as a pull does.
// No registry is asked, so the step has no reachability check. An image
// the bundle cannot give, or a runtime it cannot load into, is the plan's
// error, before anything changes. The step is scripts/image_load.sh; for
// Apptainer it makes the OCI archive, and image_file_pull.sh's step
// builds the image file in image_dir from it (apptainer build FILE
// oci-archive:ARCHIVE), recorded in the ledger as a pull is. For enroot,
// whose import reads no archive, the bundle gives the image file itself
// (bundle.LoadEnroot), which that step copies in (squashfs:FILE).
func (r *imagesResource) load(im ImageRef, b *facts.BundleImage, platform string) ([]Step, error) {
	if b == nil {
		return nil, fmt.Errorf("container image %s: the bundle has no record of it; build the bundle again with gpuform bundle", im.Ref)
	}
	if b.Missing != "" {
		return nil, fmt.Errorf("container image %s is not on the node and the bundle cannot give it, so nothing is loaded or pulled: %s", im.Ref, b.Missing)
	}
	if r.runtime == facts.RuntimeEnroot {
		// enroot import reads registries and daemons only (docker://,
		// dockerd://, podman://: NVIDIA/enroot doc/cmd/import.md), so
		// the bundle holds the image file an enroot host of the block
		// imported; apply copies it to b.Dir and image_file_pull.sh
		// hashes it again, copies it into image_dir and records it in
		// the ledger as a pull.
		if b.File == "" {
			return nil, fmt.Errorf("container image %s: the bundle %s holds no enroot image file of it; build the bundle again with gpuform bundle on a host of the node block that runs enroot", im.Ref, b.Bundle)
		}
		return []Step{r.fileStep(im, "squashfs:"+b.Dir+"/"+b.File, fmt.Sprintf("copy %s at %s from the bundle %s into %s (enroot)", im.Ref, im.Digest, b.Bundle, r.dir))}, nil
	}
	tagged := ""
	if im.Tag != "" && !fileRuntime(r.runtime) {
		tagged = im.Repo + ":" + im.Tag
	}
	st := Step{
		Description: fmt.Sprintf("load %s at %s from the bundle %s with %s", im.Ref, im.Digest, b.Bundle, r.runtime),
		Script:      nodesh.Script(imageLoadScript, append([]string{r.runtime, b.Dir, b.Name, tagged, platform}, b.Blobs...)),
		Input:       b.Index,
		Become:      true,
	}
	if !fileRuntime(r.runtime) {
		return []Step{st}, nil
	}
	st.Description = fmt.Sprintf("check and archive the bundle's blobs of %s at %s", im.Ref, im.Digest)
	archive := b.Dir + "/archives/" + strings.TrimPrefix(im.Digest, "sha256:") + ".tar"
	return []Step{st, r.fileStep(im, "oci-archive:"+archive, fmt.Sprintf("load %s at %s from the bundle %s with %s into %s", im.Ref, im.Digest, b.Bundle, r.runtime, r.dir))}, nil
}

// ImageSize writes a download size as Docker does, in decimal units.
func ImageSize(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, u := range []string{"kB", "MB", "GB", "TB"} {
		f /= unit
		if f < unit || u == "TB" {
			return fmt.Sprintf("%.1f %s", f, u)
		}
	}
	return ""
}
