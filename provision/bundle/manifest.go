// Package bundle is an offline bundle for air-gapped sites: the package
// repositories a spec's plan installs and the images its lock pins (in an
// OCI layout, which provision/registry writes), gathered where
// the network is, with a manifest that names every file, its sha256, its
// size, where it came from and the lock entry it satisfies, and the lock
// file it was built for. It reads a manifest with a size bound and checks
// every file against it before anything uses the file; it writes the
// signed apt repository a node installs from and signs a dnf one's
// metadata; it copies a repository to a
// node and names it as the package manager's only source for apply's
// steps (Stage); it proves a repository closed offline with the
// distribution's own solver (CheckApt, CheckDnf); it writes a bundle as
// one deterministic tarball and extracts one safely (WriteArchive,
// ExtractArchive); it answers what the bundle offers a node
// (Repo.Offers) so that a plan made with -bundle resolves releases from
// the bundle; and it answers what a node loads of each pinned image
// (LoadImage: its blobs and the index.json naming it repository@digest),
// whose blobs StageImages copies to the node, so that the plan loads
// images instead of pulling them.
//
// The packages are resolved by the node's own package manager in
// download-only mode (DownloadApt, DownloadDnf, over the transport gpuform
// already uses), never by gpuform.
package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/internal/readlimit"
)

// ManifestName is the manifest's file name at the bundle's top.
const ManifestName = "manifest.json"

// MaxManifest bounds the manifest read back: a bundle of a few thousand
// packages is well under a megabyte.
const MaxManifest = 16 << 20

// MaxFile bounds one file of a bundle. The largest NVIDIA packages (the
// CUDA toolkit's) are a few GiB, but an image layer or an enroot .sqsh of
// an NGC framework image is ten or more: 64 GiB keeps a host that sends
// without end bounded without refusing the images sites run. A tarball's
// listed sizes are checked against the free space before it is extracted.
const MaxFile = 64 << 30

// Manifest is what a bundle holds and what it was built for.
type Manifest struct {
	// FormatVersion is jsonformat.Version when it was written.
	FormatVersion string `json:"format_version"`
	// Lock is the sha256 of the lock file (.gpuform.lock.hcl) the bundle
	// was built for; "" when the spec had none.
	Lock string `json:"lock_sha256"`
	// Repos are the package repositories, one per node block and
	// platform.
	Repos []Repo `json:"repos"`
	// Images are the lock's images, each platform's saved by digest in
	// the OCI image layout ImagesDir.
	Images []Image `json:"images,omitempty"`
	// Files are every file of the bundle but the manifest, sorted by path.
	Files []File `json:"files"`
}

// ImagesDir is the bundle's OCI image layout (index.json, blobs/).
const ImagesDir = "images"

// Image is one pinned image of one platform in the bundle's layout.
type Image struct {
	// Node is the spec's node block whose lock entry it is.
	Node string `json:"node"`
	// Ref is the reference as the spec writes it.
	Ref string `json:"ref"`
	// Platform is "linux/amd64" or "linux/arm64".
	Platform string `json:"platform"`
	// Name is the layout's name of it: the repository @ the platform's
	// image digest, as the lock pins it.
	Name string `json:"name"`
	// EnrootFile is, for a node block whose runtime is enroot, the image
	// file (EnrootDir/SHA256.sqsh) a host of the block imported with its
	// own enroot (ImportEnroot); "" for other runtimes.
	EnrootFile string `json:"enroot_file,omitempty"`
}

// Platform is the OCI platform of a host's uname -m.
func Platform(machine string) string { return "linux/" + debArch(machine) }

// Repo is one node block's packages for one distribution release and
// architecture: the directory a node of that platform installs from.
type Repo struct {
	// Node is the spec's node block.
	Node string `json:"node"`
	// Family is "debian" (apt) or "rhel" (dnf).
	Family string `json:"family"`
	// OS is the distribution release as facts read it ("debian 12").
	OS string `json:"os"`
	// Arch is the architecture the packages are for ("amd64").
	Arch string `json:"arch"`
	// Dir is the repository's directory in the bundle ("repos/n-debian-12-amd64").
	Dir string `json:"dir"`
	// Wanted are the releases the plan installs, "name=version": the
	// lock's entries as the node's package manager spells them.
	Wanted []string `json:"wanted"`
	// Packages are every package of the repository, the wanted ones and
	// their dependency closure.
	Packages []Package `json:"packages"`
}

// Package is one package file of a repository.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// File is the package's path in the bundle.
	File string `json:"file"`
}

// File is one file of the bundle.
type File struct {
	// Path is relative to the bundle's top, with "/".
	Path string `json:"path"`
	// SHA256 is the file's sha256, in hex.
	SHA256 string `json:"sha256"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// Source is where the file came from: the repository URI the node's
	// package manager named, or "gpuform" for what the bundle generated
	// (indexes, the key).
	Source string `json:"source"`
	// Satisfies is the lock entry (or wanted release) the file is there
	// for: "node n: nccl libnccl2=2.21.5-1+cuda12.4", "dependency of …";
	// "" for the repository's metadata.
	Satisfies string `json:"satisfies,omitempty"`
}

// safePath is a bundle-relative path: no "..", no leading "/", a plain
// set of characters (every path the bundle writes itself).
var safePath = lazyre.New(`^[A-Za-z0-9_.+~-]+(/[A-Za-z0-9_.+~%-]+)*$`)

// releaseName is a release as a repository's Wanted and Packages name
// it ("name=version"): the characters apt's and dnf's package names and
// versions use, a name starting with a letter or digit. It is what
// bundle -check hands the package manager as arguments, so a manifest's
// release can never be read as one of its options ("-o…", "--setopt…").
var releaseName = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._+-]*=[A-Za-z0-9.+~:_-]+$`)

// CheckPath refuses a path that could leave the bundle's directory.
func CheckPath(p string) error {
	if !safePath.MatchString(p) || path.Clean(p) != p || strings.HasPrefix(p, "../") || slices.Contains(strings.Split(p, "/"), "..") {
		return fmt.Errorf("the bundle path %q is not a plain relative path", p)
	}
	return nil
}

// stageOwns says whether a path in a repository's directory is one Stage
// writes there itself on the node: the apt configuration and lists that
// name the repository, dnf's repository file, the key, or a copy's
// temporary file. A bundle file there would add a source (an apt
// sources.list.d entry, a dnf .repo) to the transaction, or be
// overwritten.
func stageOwns(rel string) bool {
	first, _, _ := strings.Cut(rel, "/")
	switch first {
	case "apt.conf", "apt.conf.part", "apt.main.conf", "pkgcache.bin", "srcpkgcache.bin", "sources.list", "sources.list.d", "lists", "repos.d", "bundle.gpg":
		return true
	}
	return strings.HasSuffix(rel, ".part")
}

// ReadManifest reads and checks dir's manifest: the format version, every
// path, and that every repository's packages are files it lists.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := readlimit.ReadRegularFile(filepath.Join(dir, ManifestName), MaxManifest)
	if err != nil {
		return nil, fmt.Errorf("reading the bundle's manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("the bundle's manifest %s: %w", filepath.Join(dir, ManifestName), err)
	}
	if !jsonformat.Compatible(m.FormatVersion) {
		return nil, fmt.Errorf("the bundle's manifest has format_version %q; this gpuform reads %s.x", m.FormatVersion, jsonformat.Major())
	}
	files := map[string]bool{}
	for _, f := range m.Files {
		if err := CheckPath(f.Path); err != nil {
			return nil, err
		}
		if f.Size < 0 || f.Size > MaxFile {
			return nil, fmt.Errorf("the bundle file %s: size %d out of bounds", f.Path, f.Size)
		}
		if _, err := hex.DecodeString(f.SHA256); err != nil || len(f.SHA256) != 64 {
			return nil, fmt.Errorf("the bundle file %s: sha256 %q is not 64 hex digits", f.Path, f.SHA256)
		}
		files[f.Path] = true
	}
	nodeDirs := map[string]string{}
	for _, r := range m.Repos {
		if err := CheckPath(r.Dir); err != nil {
			return nil, err
		}
		if other, ok := nodeDirs[path.Base(r.Dir)]; ok {
			return nil, fmt.Errorf("the bundle's repositories %s and %s would be copied to the same directory of a node", other, r.Dir)
		}
		nodeDirs[path.Base(r.Dir)] = r.Dir
		for _, f := range m.Files {
			if rel, ok := strings.CutPrefix(f.Path, r.Dir+"/"); ok && stageOwns(rel) {
				return nil, fmt.Errorf("the bundle's repository %s holds %s, a name apply -bundle keeps for its own configuration of the node's package manager", r.Dir, f.Path)
			}
		}
		for _, w := range r.Wanted {
			if !releaseName.MatchString(w) {
				return nil, fmt.Errorf("the bundle's repository %s wants %q, which is not a package=version release", r.Dir, w)
			}
		}
		for _, p := range r.Packages {
			if !releaseName.MatchString(p.Name + "=" + p.Version) {
				return nil, fmt.Errorf("the bundle's repository %s holds a package %q version %q: not a package name and version", r.Dir, p.Name, p.Version)
			}
			if !files[p.File] {
				return nil, fmt.Errorf("the bundle's repository %s names %s, which its manifest does not list", r.Dir, p.File)
			}
		}
	}
	return &m, nil
}

// WriteManifest writes m as dir's manifest, with the files sorted.
func WriteManifest(dir string, m *Manifest) error {
	m.FormatVersion = jsonformat.Version
	slices.SortFunc(m.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ManifestName+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, ManifestName))
}

// HashFile returns the sha256 (hex) and size of a regular file, reading
// at most MaxFile bytes; a FIFO, device or directory is refused at once
// (O_NONBLOCK: opening a FIFO would wait for a writer).
func HashFile(name string) (string, int64, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return "", 0, err
	} else if !st.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%s is not a regular file but %s", name, kindOf(st.Mode()))
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, MaxFile+1))
	if err != nil {
		return "", 0, err
	}
	if n > MaxFile {
		return "", 0, fmt.Errorf("%s is larger than %s", name, readlimit.FormatSize(MaxFile))
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// kindOf names what a file that is not a regular one is.
func kindOf(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "of mode " + m.String()
}

// AddFile hashes dir/rel and records it in m.
func (m *Manifest) AddFile(dir, rel, source, satisfies string) error {
	if err := CheckPath(rel); err != nil {
		return err
	}
	sum, size, err := HashFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	m.Files = slices.DeleteFunc(m.Files, func(f File) bool { return f.Path == rel })
	m.Files = append(m.Files, File{Path: rel, SHA256: sum, Size: size, Source: source, Satisfies: satisfies})
	return nil
}

// File returns the manifest's entry for a path.
func (m *Manifest) File(p string) (File, bool) {
	for _, f := range m.Files {
		if f.Path == p {
			return f, true
		}
	}
	return File{}, false
}

// ErrTampered is wrapped by Verify's error for a file whose size or hash
// is not the manifest's.
var ErrTampered = errors.New("does not match the bundle's manifest")

// Verify checks every file the manifest lists under prefix ("" for all)
// against its size and sha256: the whole bundle is refused for one bad
// file, before any of it is used. A file of a directory bundle the
// manifest does not list is not looked at, and nothing uses it: Stage
// copies listed files only (a tarball's unlisted entry is refused by
// ExtractArchive).
func (m *Manifest) Verify(dir, prefix string) error {
	var bad []string
	for _, f := range m.Files {
		if prefix != "" && !strings.HasPrefix(f.Path, prefix) {
			continue
		}
		sum, size, err := HashFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: %v", f.Path, err))
		case size != f.Size:
			bad = append(bad, fmt.Sprintf("%s: %d bytes, the manifest says %d (truncated or replaced)", f.Path, size, f.Size))
		case sum != f.SHA256:
			bad = append(bad, fmt.Sprintf("%s: sha256 %s, the manifest says %s", f.Path, sum, f.SHA256))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("the bundle %s %w: %s", dir, ErrTampered, strings.Join(bad, "; "))
	}
	return nil
}

// RepoFor returns the repository of node for a platform, or why there is
// none: the bundle covers other platforms of the node, or not the node.
func (m *Manifest) RepoFor(node, family, osName, arch string) (*Repo, error) {
	var others []string
	for i := range m.Repos {
		r := &m.Repos[i]
		if r.Node != node {
			continue
		}
		if r.Family == family && r.OS == osName && r.Arch == arch {
			return r, nil
		}
		others = append(others, r.OS+" "+r.Arch)
	}
	if len(others) == 0 {
		return nil, fmt.Errorf("the bundle has no packages for node %q", node)
	}
	return nil, fmt.Errorf("the bundle covers node %q on %s, not on %s %s", node, strings.Join(others, ", "), osName, arch)
}

// Offers returns what the repository offers, as facts.Offers' Versions:
// every version of each package, newest last as written.
func (r *Repo) Offers() map[string][]string {
	out := map[string][]string{}
	for _, p := range r.Packages {
		if !slices.Contains(out[p.Name], p.Version) {
			out[p.Name] = append(out[p.Name], p.Version)
		}
	}
	return out
}

// Missing returns the releases of wanted ("name=version") the repository
// does not hold, each with what it holds of the name instead.
func (r *Repo) Missing(wanted []string) []string {
	var out []string
	offers := r.Offers()
	for _, w := range wanted {
		name, v, _ := strings.Cut(w, "=")
		if slices.Contains(offers[name], v) {
			continue
		}
		has := "nothing of it"
		if vs := offers[name]; len(vs) > 0 {
			has = strings.Join(vs, ", ")
		}
		out = append(out, fmt.Sprintf("%s %s (the bundle has %s)", name, v, has))
	}
	return out
}

// HasRepos says whether the bundle holds packages for node, on any
// platform.
func (m *Manifest) HasRepos(node string) bool {
	for _, r := range m.Repos {
		if r.Node == node {
			return true
		}
	}
	return false
}
