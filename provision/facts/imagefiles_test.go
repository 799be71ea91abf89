package facts_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/local"
)

// TestProbeImageFiles: the probe reads the enroot and Apptainer image
// files of the directories /etc/gpuform/image-dirs lists, by name only:
// a file named by its digest is an image at that digest, a tag link adds
// its tag to the file it leads to. Unfinished pulls, names that carry no
// digest, links that lead out of the directory, to another repository or
// to nothing, lines that are no clean absolute path, and directories not
// listed are not images.
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

	n, err := facts.Probe(context.Background(), local.New("localhost"), facts.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*facts.ImageStore{
		"enroot": {Images: []facts.LocalImage{
			{ID: "/raid/images/" + fa, Digests: []string{repo + "@" + a}},
			{ID: "/raid/images/" + fb, Tags: []string{repo + ":12.8"}, Digests: []string{repo + "@" + b}},
			{ID: "/raid/images/" + other, Digests: []string{"nvcr.io/nvidia/pytorch@" + a}},
		}},
		"apptainer": {Images: []facts.LocalImage{
			{ID: "/raid/sif/" + sif, Tags: []string{repo + ":12.8"}, Digests: []string{repo + "@" + a}},
		}},
	}
	if diff := cmp.Diff(want, n.Images); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
}
