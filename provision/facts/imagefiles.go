package facts

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// Runtimes whose images are files in a directory (container image_dir)
// rather than a daemon's store.
const (
	RuntimeEnroot    = "enroot"
	RuntimeApptainer = "apptainer"
)

// ImageDirsFile lists, one absolute path a line, the directories gpuform
// pulled enroot and Apptainer images into. The probe is the same on every
// node and knows no spec, so it lists the image files of exactly these
// directories: a directory gpuform never pulled into is not read.
const ImageDirsFile = "/etc/gpuform/image-dirs"

// ImageFilesLedger records, one line each, the image files gpuform pulled
// on this node: "DEV:INODE SIZE MTIME PATH sha256:HEX", the file's
// identity as `stat -c '%d:%i %s %Y'` prints it right after the pull
// renamed it into place, and the sha256 of its content computed then
// (verify -tier full hashes the file again and compares). Entries written
// before the hash was recorded have no last field. It is root's (under /etc/gpuform): a file in image_dir whose
// identity is not recorded here was put there by someone else, or changed
// since, and its name proves nothing about its content.
const ImageFilesLedger = "/etc/gpuform/image-files"

// imageFileExt is the file an image becomes for each file runtime: enroot
// imports a registry image into a squashfs file, Apptainer into a SIF.
var imageFileExt = map[string]string{RuntimeEnroot: ".sqsh", RuntimeApptainer: ".sif"}

// ImageFileName is the file an image pulled at digest is kept in: the
// repository with "/" written "+" (as enroot names its own imports) and a
// registry port's ":" written "_", then "@sha256-" and the digest's hex,
// so that a directory listing says which build each file is.
func ImageFileName(repo, digest, runtime string) string {
	return sanitiseRepo(repo) + "@" + strings.Replace(digest, ":", "-", 1) + imageFileExt[runtime]
}

// ImageLinkName is the symlink that stands for an image's tag: jobs name
// this path, and it leads to the file of the pinned digest.
func ImageLinkName(repo, tag, runtime string) string {
	return sanitiseRepo(repo) + "+" + tag + imageFileExt[runtime]
}

func sanitiseRepo(repo string) string {
	host, rest, _ := strings.Cut(repo, "/")
	return strings.ReplaceAll(strings.ReplaceAll(host, ":", "_")+"/"+rest, "/", "+")
}

// unsanitiseRepo undoes sanitiseRepo: "+" never occurs in a repository
// and "_" never in a registry's host name, so the mapping is one to one.
func unsanitiseRepo(s string) string {
	s = strings.ReplaceAll(s, "+", "/")
	host, rest, _ := strings.Cut(s, "/")
	return strings.ReplaceAll(host, "_", ":") + "/" + rest
}

var (
	imageFilePattern = lazyre.New(`^([a-z0-9._\-]+(\+[a-z0-9._\-]+)+)@sha256-([a-f0-9]{64})\.(sqsh|sif)$`)
	imageLinkPattern = lazyre.New(`^([a-z0-9._\-]+(\+[a-z0-9._\-]+)+)\+([A-Za-z0-9._\-]{1,128})\.(sqsh|sif)$`)
)

// imageFiles reads the image files of the directories in ImageDirsFile
// into the enroot (.sqsh) and apptainer (.sif) stores: one image per file
// named by ImageFileName, its ID the file's path, its digest the one the
// name carries; a tag link adds its tag to the file it leads to. The name
// is trusted only for a file gpuform pulled on this node and that has not
// changed since (its identity matches ImageFilesLedger); any other is
// marked Unverified.
func (p *interpreter) imageFiles() {
	list, ok := p.raw.files[ImageDirsFile]
	if !ok {
		return
	}
	stores := map[string]map[string]*LocalImage{RuntimeEnroot: {}, RuntimeApptainer: {}}
	notLinks := map[string][]string{}
	pulled, hashes := ledger(p.raw.files[ImageFilesLedger])
	ids, _ := ledger(p.raw.cmds["image-file-ids"].out)
	runtimeOf := map[string]string{"sqsh": RuntimeEnroot, "sif": RuntimeApptainer}
	for _, dir := range strings.Split(list, "\n") {
		if dir == "" || dir[0] != '/' || path.Clean(dir) != dir {
			continue
		}
		for p2 := range p.raw.exists {
			if path.Dir(p2) != dir {
				continue
			}
			m := imageFilePattern.FindStringSubmatch(path.Base(p2))
			if m == nil {
				// A regular file (the probe reports links apart) under
				// a tag link's name.
				if l := imageLinkPattern.FindStringSubmatch(path.Base(p2)); l != nil {
					notLinks[runtimeOf[l[4]]] = append(notLinks[runtimeOf[l[4]]], p2)
				}
				continue
			}
			im := localImage(stores[runtimeOf[m[4]]], p2)
			im.Digests = appendNew(im.Digests, unsanitiseRepo(m[1])+"@sha256:"+m[3])
			im.Unverified = pulled[p2] == "" || pulled[p2] != ids[p2]
			if !im.Unverified {
				im.ContentSHA256 = hashes[p2]
			}
		}
	}
	for link, target := range p.raw.links {
		dir := path.Dir(link)
		m := imageLinkPattern.FindStringSubmatch(path.Base(link))
		if m == nil || !strings.Contains("\n"+list+"\n", "\n"+dir+"\n") {
			continue
		}
		if !path.IsAbs(target) {
			target = path.Join(dir, target)
		}
		t := imageFilePattern.FindStringSubmatch(path.Base(target))
		im := stores[runtimeOf[m[4]]][target]
		// A link that leads out of its directory, to another repository's
		// file or to nothing is no tag of a pulled image.
		if t == nil || im == nil || path.Dir(target) != dir || t[1] != m[1] {
			continue
		}
		im.Tags = appendNew(im.Tags, unsanitiseRepo(m[1])+":"+m[3])
	}
	for rt, byID := range stores {
		slices.Sort(notLinks[rt])
		p.setStore(rt, &ImageStore{Images: sortedImages(byID), NotLinks: notLinks[rt]})
	}
}

// ledger reads "IDENTITY... PATH [sha256:HEX]" lines (ImageFilesLedger,
// the probe's image-file-ids) into the identity by path, and the content
// hash recorded at pull time (lower-case hex) by path where the line has
// one.
func ledger(text string) (ids, hashes map[string]string) {
	ids, hashes = map[string]string{}, map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if (len(f) != 4 && len(f) != 5) || !path.IsAbs(f[3]) {
			continue
		}
		ids[f[3]] = strings.Join(f[:3], " ")
		if len(f) == 5 {
			if h, ok := strings.CutPrefix(f[4], "sha256:"); ok && sha256Hex.MatchString(h) {
				hashes[f[3]] = h
			}
		}
	}
	return ids, hashes
}

// sha256Hex is a sha256 as sha256sum prints it.
var sha256Hex = lazyre.New(`^[0-9a-f]{64}$`)

// ImageDirTrust is what the probe saw of the directories an image_dir
// will use: who may write to them decides whether a file under a digest's
// name there can be someone else's.
type ImageDirTrust struct {
	// UID is the user the probe ran as: the pull step runs as it too, and
	// a directory it owns is as trusted as root's.
	UID int `json:"uid"`
	// Dirs are, by image_dir, the directory itself (or its nearest
	// existing parent, when it does not exist yet) and every directory
	// above it up to the root, nearest first.
	Dirs map[string][]DirStat `json:"dirs"`
}

// DirStat is one directory's owner and permission bits.
type DirStat struct {
	// Path is the directory as the node sees it (symlinks resolved).
	Path string `json:"path"`
	// UID owns it.
	UID int `json:"uid"`
	// Mode is its permission bits with the sticky bit (0o1777 at most).
	Mode uint32 `json:"mode"`
	// Symbolic is the mode as ls prints it (drwxrwxrwt), for messages.
	Symbolic string `json:"symbolic"`
}

// imageDirTrust reads the probe's image-dir-stats: "me UID", then
// "DIR UID OCTAL SYMBOLIC PATH" lines, nearest first.
func (p *interpreter) imageDirTrust() {
	c, ok := p.raw.cmds["image-dir-stats"]
	if !ok {
		return
	}
	t := &ImageDirTrust{UID: -1, Dirs: map[string][]DirStat{}}
	for _, l := range strings.Split(c.out, "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && f[0] == "me" {
			if uid, err := strconv.Atoi(f[1]); err == nil && uid >= 0 {
				t.UID = uid
			}
			continue
		}
		if len(f) != 5 || !path.IsAbs(f[0]) || !path.IsAbs(f[4]) {
			continue
		}
		uid, err1 := strconv.Atoi(f[1])
		mode, err2 := strconv.ParseUint(f[2], 8, 32)
		if err1 != nil || err2 != nil || uid < 0 {
			continue
		}
		t.Dirs[f[0]] = append(t.Dirs[f[0]], DirStat{Path: f[4], UID: uid, Mode: uint32(mode) & 0o7777, Symbolic: f[3]})
	}
	if t.UID < 0 {
		p.warnf("image-dir-stats: the probe's uid is missing; image_dir trust is judged by the pull step only")
		return
	}
	p.n.ImageDirTrust = t
}
