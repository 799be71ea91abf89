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
	cases := map[string]struct {
		images     map[string]*facts.ImageStore
		before     string
		wantAction Action
		wantScript string
	}{
		"no docker daemon": {nil, "", Create, "docker pull nvcr.io/nvidia/pytorch@" + pinned + "\ndocker tag"},
		"absent":           {store(), "", Create, "docker pull"},
		"pulled and tagged": {store(facts.LocalImage{ID: "x", Tags: []string{ref}, Digests: []string{"nvcr.io/nvidia/pytorch@" + pinned}}),
			withSize, NoOp, ""},
		// Someone ran docker pull of the tag after it moved: the tag
		// points at another build.
		"tag points elsewhere": {store(
			facts.LocalImage{ID: "x", Digests: []string{"nvcr.io/nvidia/pytorch@" + pinned}},
			facts.LocalImage{ID: "y", Tags: []string{ref}, Digests: []string{"nvcr.io/nvidia/pytorch@" + other}}),
			other, Update, "docker tag nvcr.io/nvidia/pytorch@" + pinned + " nvcr.io/nvidia/pytorch:25.02-py3"},
		"built on the node": {store(facts.LocalImage{ID: "y", Tags: []string{ref}}), "(built on the node)", Update, "docker pull"},
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
			var script string
			for _, s := range c.Steps {
				script += s.Script
			}
			if tc.wantScript == "" && script != "" || !strings.Contains(script, tc.wantScript) {
				t.Errorf("script:\n%s\nwant %q", script, tc.wantScript)
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
	if len(c.After) != 1 || c.After["nvcr.io/nvidia/pytorch@"+d] != StringVal(d) || len(c.Steps) != 1 ||
		!strings.Contains(c.Steps[0].Script, "ctr -n k8s.io images pull nvcr.io/nvidia/pytorch@"+d) ||
		strings.Contains(c.Steps[0].Script, "tag") {
		t.Errorf("change %+v", c)
	}
	if !strings.Contains(strings.Join(warnings, "\n"), "container image nvcr.io/nvidia/cuda:12.8.0-base-ubuntu22.04: unpinned, not pulled: the lock file records no digest for it (lock -images=false leaves a tag unpinned); run gpuform lock where its registry can be reached, or name its digest in the spec") {
		t.Errorf("warnings: %q", warnings)
	}
}
