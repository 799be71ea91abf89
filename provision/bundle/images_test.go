package bundle

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/internal/registrytest"
	"github.com/gpuform/gpuform/provision/registry"
	"github.com/gpuform/gpuform/spec"
)

// TestLoadImage: what a node loads of an image the lock pins to an index
// is the index's manifest, the platform's manifest, config and layers,
// named repository@index-digest; an image of another platform or node is
// missing, and so is one whose blob the manifest gives another sha256
// than its name (a blob and its manifest entry replaced together).
func TestLoadImage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := registrytest.Start(t)
	d, imgs := reg.PushIndex(t, "nvidia/cuda:12.8")
	ref := reg.Host + "/nvidia/cuda:12.8"
	pin, err := registry.Resolve(ctx, ref, spec.ImagePlatforms(), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	named, err := registry.SaveLayout(ctx, ref, pin, "linux/amd64", filepath.Join(dir, ImagesDir), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := &Manifest{Images: []Image{{Node: "n", Ref: ref, Platform: "linux/amd64", Name: named}}}
	if err := filepath.WalkDir(filepath.Join(dir, ImagesDir), func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		return m.AddFile(dir, filepath.ToSlash(rel), "test", "")
	}); err != nil {
		t.Fatal(err)
	}
	repo := reg.Host + "/nvidia/cuda"
	b := m.LoadImage(dir, "n", ref, repo, d.String(), "linux/amd64")
	if b.Missing != "" {
		t.Fatal(b.Missing)
	}
	plat := imgs["linux/amd64"].Digest.Hex
	if b.Name != repo+"@"+d.String() || len(b.Blobs) != 5 || b.Blobs[0] != d.Hex || b.Blobs[1] != plat || b.Dir != NodeImagesDir {
		t.Errorf("the load: %+v", b)
	}
	var idx struct {
		Manifests []struct {
			MediaType   string
			Digest      string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal([]byte(b.Index), &idx); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		MediaType   string
		Digest      string
		Annotations map[string]string
	}{{"application/vnd.oci.image.index.v1+json", d.String(), map[string]string{"io.containerd.image.name": b.Name}}}
	if diff := cmp.Diff(want, idx.Manifests); diff != "" {
		t.Errorf("index.json (-want +got):\n%s", diff)
	}
	var total int64
	for _, h := range b.Blobs {
		f, _ := m.File(ImagesDir + "/blobs/sha256/" + h)
		total += f.Size
	}
	if b.Size != total {
		t.Errorf("size %d, the blobs' %d", b.Size, total)
	}

	for name, tc := range map[string]struct {
		node, platform, want string
		edit                 func(*Manifest)
	}{
		"another platform": {"n", "linux/arm64", "holds no linux/arm64 image of " + ref, nil},
		"another node":     {"m", "linux/amd64", `holds no linux/amd64 image of ` + ref + ` for node "m"`, nil},
		"a blob renamed": {"n", "linux/amd64", "a blob's sha256 is its name", func(m *Manifest) {
			for i := range m.Files {
				if strings.HasSuffix(m.Files[i].Path, "/"+plat) {
					m.Files[i].SHA256 = strings.Repeat("0", 64)
				}
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			mm := *m
			mm.Files = append([]File(nil), m.Files...)
			if tc.edit != nil {
				tc.edit(&mm)
			}
			if b := mm.LoadImage(dir, tc.node, ref, repo, d.String(), tc.platform); !strings.Contains(b.Missing, tc.want) || len(b.Blobs) != 0 {
				t.Errorf("missing = %q, want %q (blobs %v)", b.Missing, tc.want, b.Blobs)
			}
		})
	}
}

// TestImageName: Docker Hub's repositories are named as containerd names
// them, others as written.
func TestImageName(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for repo, want := range map[string]string{
		"ubuntu":                 "docker.io/library/ubuntu@" + d,
		"nvidia/cuda":            "docker.io/nvidia/cuda@" + d,
		"docker.io/nvidia/cuda":  "docker.io/nvidia/cuda@" + d,
		"nvcr.io/nvidia/pytorch": "nvcr.io/nvidia/pytorch@" + d,
		"127.0.0.1:5000/x/y":     "127.0.0.1:5000/x/y@" + d,
	} {
		if got := ImageName(repo, d); got != want {
			t.Errorf("ImageName(%q) = %q, want %q", repo, got, want)
		}
	}
}
