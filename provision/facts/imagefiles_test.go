//go:build linux

package facts_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/resource"
)

// TestProbeImageFiles: the probe reads the enroot and Apptainer image
// files of the directories /etc/gpuform/image-dirs lists, by name only:
// a file named by its digest is an image at that digest, a tag link adds
// its tag to the file it leads to. Unfinished pulls, names that carry no
// digest, links that lead out of the directory, to another repository or
// to nothing, lines that are no clean absolute path, and directories not
// listed are not images. A file whose identity /etc/gpuform/image-files
// does not record as it is now is Unverified, and a regular file under a
// tag link's name is listed in NotLinks.
func TestProbeImageFiles(t *testing.T) {
	a := "sha256:" + strings.Repeat("a", 64)
	b := "sha256:" + strings.Repeat("b", 64)
	repo := "127.0.0.1:5000/nvidia/cuda"
	root := t.TempDir()
	write := func(p, content string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(p, target string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/os-release", "ID=testos\n")
	write("etc/gpuform/image-dirs", "/raid/images\nrelative/dir\n/raid/../etc\n/raid/sif")
	fa := facts.ImageFileName(repo, a, facts.RuntimeEnroot)
	fb := facts.ImageFileName(repo, b, facts.RuntimeEnroot)
	other := facts.ImageFileName("nvcr.io/nvidia/pytorch", a, facts.RuntimeEnroot)
	write("raid/images/"+fa, "x")
	write("raid/images/"+fb, "x")
	write("raid/images/"+other, "x")
	write("raid/images/."+fa+".gpuform-tmp", "partial")
	write("raid/images/cuda.sqsh", "no digest in the name")
	link("raid/images/"+facts.ImageLinkName(repo, "12.8", facts.RuntimeEnroot), fb)
	link("raid/images/"+facts.ImageLinkName(repo, "12.9", facts.RuntimeEnroot), "/raid/elsewhere/"+fa)
	link("raid/images/"+facts.ImageLinkName(repo, "13.0", facts.RuntimeEnroot), other)
	link("raid/images/"+facts.ImageLinkName(repo, "13.1", facts.RuntimeEnroot), facts.ImageFileName(repo, "sha256:"+strings.Repeat("c", 64), facts.RuntimeEnroot))
	sif := facts.ImageFileName(repo, a, facts.RuntimeApptainer)
	write("raid/sif/"+sif, "x")
	link("raid/sif/"+facts.ImageLinkName(repo, "12.8", facts.RuntimeApptainer), sif)
	write("raid/unlisted/"+fa, "x")
	write("etc/"+fa, "x")
	// A regular file under a tag link's name: someone else's.
	write("raid/images/"+facts.ImageLinkName(repo, "14.0", facts.RuntimeEnroot), "an admin's file")
	// The ledger of what gpuform pulled: fa and sif as they are, fb with
	// another modification time (changed since), other not at all.
	ident := func(p string, mtimeDelta int64) string {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(root, p), &st); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d:%d %d %d /%s", st.Dev, st.Ino, st.Size, st.Mtim.Sec+mtimeDelta, p)
	}
	write("etc/gpuform/image-files", ident("raid/images/"+fa, 0)+"\n"+ident("raid/images/"+fb, 60)+"\n"+ident("raid/sif/"+sif, 0)+"\n")

	n, err := facts.Probe(context.Background(), local.New("localhost"), facts.Options{Reads: resource.Reads(), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*facts.ImageStore{
		"enroot": {Images: []facts.LocalImage{
			{ID: "/raid/images/" + fa, Digests: []string{repo + "@" + a}},
			{ID: "/raid/images/" + fb, Tags: []string{repo + ":12.8"}, Digests: []string{repo + "@" + b}, Unverified: true},
			{ID: "/raid/images/" + other, Digests: []string{"nvcr.io/nvidia/pytorch@" + a}, Unverified: true},
		}, NotLinks: []string{"/raid/images/" + facts.ImageLinkName(repo, "14.0", facts.RuntimeEnroot)}},
		"apptainer": {Images: []facts.LocalImage{
			{ID: "/raid/sif/" + sif, Tags: []string{repo + ":12.8"}, Digests: []string{repo + "@" + a}},
		}},
	}
	if diff := cmp.Diff(want, n.Images); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
}

// TestProbeImageDirTrust: the probe reports the owner and mode of each
// image_dir the controller names, or of its nearest existing parent, and
// of every directory above up to the root prefix, nearest first; a name
// that is no clean absolute path is not looked at.
func TestProbeImageDirTrust(t *testing.T) {
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "raid/images"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "raid"), 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "etc/gpuform"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/os-release"), []byte("ID=testos\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := facts.Probe(context.Background(), local.New("localhost"), facts.Options{Reads: resource.Reads(), Root: root, ImageDirs: []string{"/raid/images", "/raid/missing/deeper", "/raid/../etc"}})
	if err != nil {
		t.Fatal(err)
	}
	uid := os.Getuid()
	images := facts.DirStat{Path: "/raid/images", UID: uid, Mode: 0o755, Symbolic: "drwxr-xr-x"}
	raid := facts.DirStat{Path: "/raid", UID: uid, Mode: 0o1777, Symbolic: "drwxrwxrwt"}
	top := facts.DirStat{Path: "/", UID: uid, Mode: 0o755, Symbolic: "drwxr-xr-x"}
	want := &facts.ImageDirTrust{UID: uid, Dirs: map[string][]facts.DirStat{
		"/raid/images":         {images, raid, top},
		"/raid/missing/deeper": {raid, top},
	}}
	if diff := cmp.Diff(want, n.ImageDirTrust); diff != "" {
		t.Errorf("ImageDirTrust (-want +got):\n%s", diff)
	}

	// Without image dirs asked about, nothing is reported.
	n, err = facts.Probe(context.Background(), local.New("localhost"), facts.Options{Reads: resource.Reads(), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if n.ImageDirTrust != nil {
		t.Errorf("ImageDirTrust without ImageDirs: %+v", n.ImageDirTrust)
	}
}
