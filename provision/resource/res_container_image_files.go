package resource

import (
	"fmt"
	"strconv"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/gpuform/gpuform/provision/facts"
)

// pullFile is one image's step for enroot and Apptainer, whose images are
// files: the runtime pulls the image by digest into a temporary name in
// image_dir, which is renamed to facts.ImageFileName once the pull
// succeeded (so a file under that name is always a finished pull, and an
// interrupted one is never mistaken for it); the tag's symlink
// (facts.ImageLinkName) then moves to it, so a job that names the tag's
// path runs the pinned build. A file already there at the digest is not
// pulled again. The file of a digest the tag left is kept: a queued job
// may name it, and gpuform removes no image file (see docs/guide/containers.md).
//
// Credentials are the node's own: enroot reads root's
// $ENROOT_CONFIG_PATH/.credentials (netrc), Apptainer root's
// ~/.apptainer/docker-config.json or ~/.docker/config.json (what
// `apptainer registry login` and `docker login` write). gpuform sends none.
// The step is scripts/image_file_pull.sh.
func (r *imagesResource) pullFile(im ImageRef, what string) Step {
	ref := "docker://" + im.Repo + "@" + im.Digest
	if r.runtime == facts.RuntimeEnroot {
		ref = EnrootURI(im)
	}
	st := r.fileStep(im, ref, fmt.Sprintf("pull %s at %s with %s into %s", im.Ref, what, r.runtime, r.dir))
	st.Check = imageReachableCheck(im, r.runtime)
	return st
}

// fileStep is image_file_pull.sh's step for im, from ref.
func (r *imagesResource) fileStep(im ImageRef, ref, description string) Step {
	link := ""
	if im.Tag != "" {
		link = facts.ImageLinkName(im.Repo, im.Tag, r.runtime)
	}
	return Step{
		Description: description,
		Script: resolvingScript(imageFilePullScript, r.dir, facts.ImageFileName(im.Repo, im.Digest, r.runtime), link,
			strconv.FormatBool(r.shared), facts.ImageFilesLedger, facts.ImageDirsFile, r.runtime, ref),
		Become: true,
	}
}

// judgeImageDir is image_file_pull.sh's image_dir check at plan time, on what the probe saw of
// dir (facts.ImageDirTrust): the same rules, so that a directory the pull
// step would refuse is a plan error before anything is applied. A
// directory that does not exist yet is judged by its nearest existing
// parent, where mkdir -p makes it: whoever may write there may make it
// first. Nothing is judged where the probe saw nothing of dir (a re-probe
// after the steps); the pull step still refuses.
func judgeImageDir(dir string, t *facts.ImageDirTrust) error {
	if t == nil {
		return nil
	}
	chain := t.Dirs[dir]
	for i, d := range chain {
		what := d.Path
		if i == 0 && d.Path != dir {
			what = fmt.Sprintf("%s does not exist yet, and its nearest existing parent %s", dir, d.Path)
		}
		if d.UID != 0 && d.UID != t.UID {
			return fmt.Errorf("image_dir %s: %s belongs to user %d, not root (mode %s): another user could plant a file under an image's name; make root its owner, or set image_dir_shared = true if it is shared storage", dir, what, d.UID, d.Symbolic)
		}
		if d.Mode&0o022 != 0 && (i == 0 || d.Mode&0o1000 == 0) {
			return fmt.Errorf("image_dir %s: %s (owner uid %d, mode %s) is writable by users other than its owner: another user could plant a file under an image's name; chmod go-w it, or set image_dir_shared = true if it is shared storage", dir, what, d.UID, d.Symbolic)
		}
	}
	return nil
}

// EnrootURI is the reference enroot imports (what container_images pulls,
// and what gpuform bundle has an enroot host import): docker://REGISTRY#IMAGE with
// the digest in the tag's place (Docker Hub's images without a registry,
// enroot's default). enroot 3.x reads a reference as
// docker://[USER@][REGISTRY#]IMAGE[:TAG] with ":" allowed in TAG and asks
// the registry for /v2/IMAGE/manifests/TAG
// (NVIDIA/enroot src/docker.sh at v3.5.0, docker::import); 4.x keeps that
// form (src/docker.sh at 8ea147d337da60cb1c557140f3a85cdf0d620968,
// docker::_parse_uri) and adds IMAGE@DIGEST, which 3.x refuses. A digest
// is a manifest reference wherever a tag is, so both versions fetch the
// pinned manifest.
func EnrootURI(im ImageRef) string {
	repo, err := name.NewRepository(im.Repo)
	if err != nil {
		return "docker://" + im.Repo + ":" + im.Digest
	}
	if repo.RegistryStr() == name.DefaultRegistry {
		return "docker://" + repo.RepositoryStr() + ":" + im.Digest
	}
	return "docker://" + repo.RegistryStr() + "#" + repo.RepositoryStr() + ":" + im.Digest
}
