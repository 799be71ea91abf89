package resource

import (
	"fmt"
	"strings"

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
func (r *imagesResource) pullFile(im ImageRef, what string) Step {
	file := facts.ImageFileName(im.Repo, im.Digest, r.runtime)
	var pull string
	switch r.runtime {
	case facts.RuntimeEnroot:
		pull = "enroot import --output " + `"${D#"$R"}/$tmp" ` + q(enrootURI(im))
	default:
		pull = "apptainer pull " + `"${D#"$R"}/$tmp" ` + q("docker://"+im.Repo+"@"+im.Digest)
	}
	var s strings.Builder
	s.WriteString(scriptHead + facts.Resolver)
	// Temporary names are the host's own: image_dir may be shared storage
	// that every node of a cluster pulls into at once. An interrupted pull
	// (the step's time limit) removes its partial file.
	fmt.Fprintf(&s, "d=%s\nf=%s\nu=$(uname -n).$$.gpuform-tmp\ntmp=.$f.$u\n", q(r.dir), q(file))
	s.WriteString(`rw "$d" || { echo "image_dir $d: $_e" >&2; exit 1; }
D=$_r
mkdir -p "$D"
`)
	if im.Tag != "" {
		// Plan refuses a regular file at the link's name where the probe
		// saw it; the step refuses anything but a link there too, before
		// it pulls (a directory gpuform has not recorded yet is not
		// probed), since mv -f would replace it.
		fmt.Fprintf(&s, "l=%s\n", q(facts.ImageLinkName(im.Repo, im.Tag, r.runtime)))
		s.WriteString(`if [ -e "$D/$l" ] && [ ! -h "$D/$l" ]; then
	echo "$d/$l is not the tag's link gpuform makes (a file or directory of someone else's); gpuform replaces nothing it did not write: move it away, then apply again" >&2
	exit 1
fi
`)
	}
	// The ledger of the files gpuform pulled on this node (root's): a
	// file under the digest's name is adopted only when it is one of
	// them, unchanged; any other is pulled again over it, since its name
	// proves nothing about its content. The ledger records the file's
	// sha256 too, hashed here after the pull (within the step's time
	// limit), for verify -tier full to hash it again; an entry an older
	// gpuform wrote without one is pulled again. On shared storage another node
	// pulled it, and the spec says so: it is adopted by its name.
	fmt.Fprintf(&s, "shared=%t\n", r.shared)
	fmt.Fprintf(&s, `rw %s || { echo "%s: $_e" >&2; exit 1; }
L=$_r
`, q(facts.ImageFilesLedger), facts.ImageFilesLedger)
	s.WriteString(`ident() { stat -c '%d:%i %s %Y' "$1"; }
if ! $shared; then
	` + imageDirTrust + `
fi
mine=false
if [ -f "$D/$f" ]; then
	if $shared; then
		mine=true
	elif [ -f "$L" ] && awk -v p="$d/$f" -v id="$(ident "$D/$f")" '$4 == p && $1 " " $2 " " $3 == id && length($5) == 71 && substr($5, 1, 7) == "sha256:" { ok = 1 } END { exit !ok }' "$L"; then
		mine=true
	elif [ -f "$L" ] && awk -v p="$d/$f" '$4 == p && NF == 4 { ok = 1 } END { exit !ok }' "$L"; then
		echo "$d/$f: recorded without a content hash (an older gpuform): pulling it again"
	else
		echo "$d/$f: not pulled by gpuform on this node (or changed since): pulling it again"
	fi
fi
if $mine; then
	echo "$d/$f: already on the node"
else
	trap 'rm -f "$D/$tmp"' EXIT
	trap 'exit 1' HUP INT TERM
	` + pull + `
	h=$(sha256sum <"$D/$tmp") || { echo "$d/$tmp: sha256sum failed" >&2; exit 1; }
	h=${h%% *}
	mv -f "$D/$tmp" "$D/$f"
	mkdir -p "${L%/*}"
	{ [ -f "$L" ] && awk -v p="$d/$f" '$4 != p' "$L"; echo "$(ident "$D/$f") $d/$f sha256:$h"; } >"$L.$u"
	mv -f "$L.$u" "$L"
fi
`)
	if im.Tag != "" {
		s.WriteString("ln -sf \"$f\" \"$D/.$l.$u\"\nmv -f \"$D/.$l.$u\" \"$D/$l\"\necho \"$d/$l -> $f\"\n")
	}
	// The directory is recorded last: the probe lists the image files of
	// the directories recorded there.
	fmt.Fprintf(&s, `rw %s || { echo "%s: $_e" >&2; exit 1; }
if ! grep -qxF "$d" "$_r" 2>/dev/null; then
	mkdir -p "${_r%%/*}"
	printf '%%s\n' "$d" >>"$_r"
fi
`, q(facts.ImageDirsFile), facts.ImageDirsFile)
	return Step{
		Description: fmt.Sprintf("pull %s at %s with %s into %s", im.Ref, what, r.runtime, r.dir),
		Script:      s.String(),
		Become:      true,
		Check:       imageReachableCheck(im, r.runtime),
	}
}

// imageDirTrust refuses an image_dir ($D, shown as $d) that users other
// than root, or the user the step runs as, may write to, or that lies
// under a directory they may rename or replace it in (group or world
// writable without the sticky bit): any of them could put a file under a
// digest's name, or a link under a tag's, before gpuform looks.
// image_dir_shared = true is the spec saying so on purpose.
const imageDirTrust = `me=$(id -u)
p=$D
while :; do
	o=$(stat -c %u "$p") || exit 1
	if [ "$o" != 0 ] && [ "$o" != "$me" ]; then
		echo "image_dir $d: ${p#"$R"} belongs to user $o, not root: another user could plant a file under an image's name; make root its owner, or set image_dir_shared = true if it is shared storage" >&2
		exit 1
	fi
	if [ "$p" = "$D" ] && [ -n "$(find "$p" -maxdepth 0 -perm /022)" ] || [ -n "$(find "$p" -maxdepth 0 -perm /022 ! -perm -1000)" ]; then
		echo "image_dir $d: ${p#"$R"} is writable by users other than its owner ($(stat -c %A "$p")): another user could plant a file under an image's name; chmod go-w it, or set image_dir_shared = true if it is shared storage" >&2
		exit 1
	fi
	[ "$p" = "${R:-/}" ] || [ "$p" = / ] && break
	p=$(dirname "$p")
done`

// judgeImageDir is imageDirTrust at plan time, on what the probe saw of
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

// enrootURI is the reference enroot imports: docker://REGISTRY#IMAGE with
// the digest in the tag's place (Docker Hub's images without a registry,
// enroot's default). enroot 3.x reads a reference as
// docker://[USER@][REGISTRY#]IMAGE[:TAG] with ":" allowed in TAG and asks
// the registry for /v2/IMAGE/manifests/TAG
// (NVIDIA/enroot src/docker.sh at v3.5.0, docker::import); 4.x keeps that
// form (src/docker.sh at 8ea147d337da60cb1c557140f3a85cdf0d620968,
// docker::_parse_uri) and adds IMAGE@DIGEST, which 3.x refuses. A digest
// is a manifest reference wherever a tag is, so both versions fetch the
// pinned manifest.
func enrootURI(im ImageRef) string {
	repo, err := name.NewRepository(im.Repo)
	if err != nil {
		return "docker://" + im.Repo + ":" + im.Digest
	}
	if repo.RegistryStr() == name.DefaultRegistry {
		return "docker://" + repo.RepositoryStr() + ":" + im.Digest
	}
	return "docker://" + repo.RegistryStr() + "#" + repo.RepositoryStr() + ":" + im.Digest
}
