package bundle

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
)

//go:embed scripts/enroot_import.sh
var enrootImportScript string

// EnrootDir is where the bundle keeps enroot's image files, each named
// by its sha256 (enroot/SHA256.sqsh under ImagesDir, and under
// NodeImagesDir on a node): enroot import reads registries and daemons
// only (docker://, dockerd://, podman://: NVIDIA/enroot doc/cmd/import.md),
// never an OCI layout, so an enroot node is given the image file itself.
const EnrootDir = ImagesDir + "/enroot"

// enrootFile is an image file's path under ImagesDir.
var enrootFile = lazyre.New(`^enroot/[a-f0-9]{64}\.sqsh$`)

// EnrootImage is one image an enroot host imports for the bundle.
type EnrootImage struct {
	// Ref is the reference as the spec writes it.
	Ref string
	// URI is what enroot imports: the repository at the lock's digest
	// (resource.EnrootURI), as the image resource pulls it.
	URI string
}

// ImportEnroot has the host behind tr (one of node's, of platform) import
// each of ims with its own enroot, as the image resource would on a node,
// copies each image file back into out under EnrootDir, checked against
// the sha256 the host read, records it in m (its source the host and the
// URI, the lock entry it satisfies) and names it in m's image of node,
// ref and platform (Image.EnrootFile). A host without enroot is refused.
func ImportEnroot(ctx context.Context, tr transport.Transport, become bool, out string, m *Manifest, node, platform string, ims []EnrootImage) error {
	if err := os.MkdirAll(filepath.Join(out, filepath.FromSlash(EnrootDir)), 0o755); err != nil {
		return err
	}
	for _, im := range ims {
		var entry *Image
		for i := range m.Images {
			if m.Images[i].Node == node && m.Images[i].Ref == im.Ref && m.Images[i].Platform == platform {
				entry = &m.Images[i]
			}
		}
		if entry == nil {
			return fmt.Errorf("node %s: the bundle holds no %s image of %s to import with enroot", node, platform, im.Ref)
		}
		rel, err := importEnroot(ctx, tr, become, out, im)
		if err != nil {
			return fmt.Errorf("node %s: image %s: %w", node, im.Ref, err)
		}
		if err := m.AddFile(out, rel, tr.Host()+": enroot import "+im.URI, fmt.Sprintf("node %s: container image %s (%s, enroot)", node, im.Ref, platform)); err != nil {
			return err
		}
		entry.EnrootFile = rel
	}
	return nil
}

// importEnroot imports one image on the host and copies its file back,
// returning its path in the bundle.
func importEnroot(ctx context.Context, tr transport.Transport, become bool, out string, im EnrootImage) (string, error) {
	res, err := tr.Run(ctx, transport.Command{Script: nodesh.Script(enrootImportScript, []string{im.URI}), Become: become})
	if err != nil {
		return "", err
	}
	stdout := string(res.Stdout)
	dir, _, _ := strings.Cut(strings.TrimPrefix(stdout, "@dir "), "\n")
	if strings.HasPrefix(stdout, "@dir ") {
		defer cleanup(ctx, tr, become, dir) //nolint:errcheck // an import directory left in /var/tmp is harmless
	}
	if res.ExitCode != 0 {
		return "", &transport.HostError{Host: tr.Host(), Op: "import " + im.URI + " with enroot", Err: fmt.Errorf("exit %d: %s", res.ExitCode, lastLines(string(res.Stderr), 5))}
	}
	var src, sum string
	var size int64 = -1
	for _, line := range strings.Split(stdout, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "@file" {
			src, sum = f[1], f[2]
			size, _ = strconv.ParseInt(f[3], 10, 64)
		}
	}
	rel := "enroot/" + sum + ".sqsh"
	if src != dir+"/image.sqsh" || !enrootFile.MatchString(rel) || size < 0 {
		return "", fmt.Errorf("%s: enroot import printed no image file gpuform reads (%q)", tr.Host(), lastLines(stdout, 2))
	}
	if size > MaxFile {
		return "", fmt.Errorf("%s: the image file of %s is %d bytes, over the bundle's bound on one file (%d)", tr.Host(), im.URI, size, int64(MaxFile))
	}
	dest := filepath.Join(out, ImagesDir, filepath.FromSlash(rel))
	if err := fetch(ctx, tr, become, src, dest); err != nil {
		os.Remove(dest)
		return "", err
	}
	if got, n, err := HashFile(dest); err != nil || got != sum || n != size {
		os.Remove(dest)
		if err == nil {
			err = fmt.Errorf("sha256 %s and %d bytes after the copy, the host read sha256 %s and %d bytes", got, n, sum, size)
		}
		return "", fmt.Errorf("%s: the image file of %s: %w", tr.Host(), im.URI, err)
	}
	return ImagesDir + "/" + rel, nil
}

// LoadEnroot is what an enroot node needs to install the image ref of
// node block node, pinned to digest, for platform: the image file an
// enroot host of the block imported (ImportEnroot), which apply copies to
// the node and image_file_pull.sh checks by its sha256 again before it
// moves it into image_dir. Where the bundle holds none, Missing says so.
func (m *Manifest) LoadEnroot(dir, node, ref, repo, digest, platform string) *facts.BundleImage {
	missing := func(format string, a ...any) *facts.BundleImage {
		return &facts.BundleImage{Bundle: dir, Missing: fmt.Sprintf(format, a...)}
	}
	var im *Image
	for i := range m.Images {
		if m.Images[i].Node == node && m.Images[i].Ref == ref && m.Images[i].Platform == platform {
			im = &m.Images[i]
		}
	}
	if im == nil || im.EnrootFile == "" {
		return missing("the bundle %s holds no enroot image file of %s (%s) for node %q: enroot import reads no OCI layout, so gpuform bundle has a host of the node block that runs enroot import it; build the bundle again there with gpuform bundle (after gpuform lock)", dir, ref, platform, node)
	}
	rel, ok := strings.CutPrefix(im.EnrootFile, ImagesDir+"/")
	if !ok || !enrootFile.MatchString(rel) {
		return missing("the bundle %s names %q as the enroot image file of %s: not a file gpuform bundle writes", dir, im.EnrootFile, ref)
	}
	f, ok := m.File(im.EnrootFile)
	if !ok {
		return missing("the bundle %s: the enroot image file %s of %s is not in its manifest", dir, im.EnrootFile, ref)
	}
	if want := strings.TrimSuffix(path.Base(rel), ".sqsh"); f.SHA256 != want {
		return missing("the bundle %s: the manifest gives %s the sha256 %s: an enroot image file's sha256 is its name", dir, im.EnrootFile, f.SHA256)
	}
	return &facts.BundleImage{Bundle: dir, Dir: NodeImagesDir, Name: ImageName(repo, digest), File: rel, Size: f.Size}
}
