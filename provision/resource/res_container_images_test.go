package resource

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// TestContainerImagesDiff compares the pinned digest of a tag with what
// the node's runtime holds under that tag.
func TestContainerImagesDiff(t *testing.T) {
	pinned := "sha256:" + strings.Repeat("a", 64)
	other := "sha256:" + strings.Repeat("b", 64)
	const ref = "nvcr.io/nvidia/pytorch:25.02-py3"
	pin := spec.ImagePin{Digest: pinned, Platforms: map[string]spec.PlatformPin{
		"linux/amd64": {Digest: "sha256:" + strings.Repeat("c", 64), Size: 9_876_543_210},
	}}
	withSize := pinned + " (9.9 GB)"
	store := func(images ...facts.LocalImage) map[string]*facts.ImageStore {
		return map[string]*facts.ImageStore{"docker": {Images: images}}
	}
	// Docker pulls the pinned build by digest and points the tag at it.
	pull := "image_pull.sh docker nvcr.io/nvidia/pytorch@" + pinned + " nvcr.io/nvidia/pytorch:25.02-py3\n"
	cases := map[string]struct {
		images     map[string]*facts.ImageStore
		before     string
		wantAction Action
		wantScript string
	}{
		"no docker daemon": {nil, "", Create, pull},
		"absent":           {store(), "", Create, pull},
		"pulled and tagged": {store(facts.LocalImage{ID: "x", Tags: []string{ref}, Digests: []string{"nvcr.io/nvidia/pytorch@" + pinned}}),
			withSize, NoOp, ""},
		// Someone ran docker pull of the tag after it moved: the tag
		// points at another build.
		"tag points elsewhere": {store(
			facts.LocalImage{ID: "x", Digests: []string{"nvcr.io/nvidia/pytorch@" + pinned}},
			facts.LocalImage{ID: "y", Tags: []string{ref}, Digests: []string{"nvcr.io/nvidia/pytorch@" + other}}),
			other, Update, pull},
		"built on the node": {store(facts.LocalImage{ID: "y", Tags: []string{ref}}), "(built on the node)", Update, pull},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := loadNode(t, `container { images = ["`+ref+`"] }`)
			n.Container.Pins = map[string]spec.ImagePin{ref: pin}
			f := debianNode()
			f.Arch = "x86_64"
			f.Images = tc.images
			ch, _ := diffAll(t, n, f)
			c := ch[ContainerImages]
			if c.Action != tc.wantAction || c.After[ref] != StringVal(withSize) || c.Before[ref] != StringVal(tc.before) {
				t.Errorf("action %c, before %v, after %v", c.Action, c.Before, c.After)
			}
			if calls := callsOf(t, c.Steps); calls != tc.wantScript {
				t.Errorf("steps:\n%s\nwant:\n%s", calls, tc.wantScript)
			}
		})
	}
}

// TestContainerImagesUnlocked: a tag without a lock entry is not pulled
// (gpuform would not know which build), with a warning that says what to
// run; a reference that names its digest is pulled without one, with
// containerd's tools when that is the runtime.
func TestContainerImagesUnlocked(t *testing.T) {
	d := "sha256:" + strings.Repeat("d", 64)
	n := loadNode(t, `container {
  runtime = "containerd"
  images  = ["nvcr.io/nvidia/cuda:12.8.0-base-ubuntu22.04", "nvcr.io/nvidia/pytorch@`+d+`"]
}`)
	ch, warnings := diffAll(t, n, debianNode())
	c := ch[ContainerImages]
	// containerd's tools pull it (image_pull.sh), with no tag to point.
	if len(c.After) != 1 || c.After["nvcr.io/nvidia/pytorch@"+d] != StringVal(d) || len(c.Steps) != 1 ||
		callOf(t, c.Steps[0]).String() != "image_pull.sh containerd nvcr.io/nvidia/pytorch@"+d+" ''" {
		t.Errorf("change %+v", c)
	}
	if !strings.Contains(strings.Join(warnings, "\n"), "container image nvcr.io/nvidia/cuda:12.8.0-base-ubuntu22.04: unpinned, not pulled: the lock file records no digest for it (lock -images=false leaves a tag unpinned); run gpuform lock where its registry can be reached, or name its digest in the spec") {
		t.Errorf("warnings: %q", warnings)
	}
}
