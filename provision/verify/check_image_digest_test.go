package verify

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// TestImageDigestCheck judges what the node's runtime holds for a pinned
// tag: the pinned digest passes, another digest under the tag fails as a
// moved tag, a missing image or daemon fails, an unreadable store or
// missing facts errs, and an unlocked tag is skipped.
func TestImageDigestCheck(t *testing.T) {
	const ref = "nvcr.io/nvidia/pytorch:25.02-py3"
	pinned := "sha256:" + strings.Repeat("a", 64)
	other := "sha256:" + strings.Repeat("b", 64)
	node := func(lock bool) *spec.Node {
		c := &spec.Container{Images: []spec.Attr[string]{{V: ref, Set: true}}}
		if lock {
			c.Pins = map[string]spec.ImagePin{ref: {Digest: pinned}}
		}
		return &spec.Node{Name: "n", Container: c}
	}
	docker := func(images ...facts.LocalImage) *facts.Node {
		return &facts.Node{Images: map[string]*facts.ImageStore{"docker": {Images: images}}}
	}
	cases := map[string]struct {
		n        *spec.Node
		f        *facts.Node
		status   Status
		observed string
		msg      string
	}{
		"pinned": {node(true), docker(facts.LocalImage{ID: "x", Tags: []string{ref}, Digests: []string{"nvcr.io/nvidia/pytorch@" + pinned}}), StatusPass, pinned, ""},
		"tag moved": {node(true), docker(
			facts.LocalImage{ID: "x", Digests: []string{"nvcr.io/nvidia/pytorch@" + pinned}},
			facts.LocalImage{ID: "y", Tags: []string{ref}, Digests: []string{"nvcr.io/nvidia/pytorch@" + other}}), StatusFail, other, "the tag now points elsewhere"},
		"absent":         {node(true), docker(), StatusFail, "absent", "holds no"},
		"no daemon":      {node(true), &facts.Node{}, StatusFail, "absent", "not running on the node"},
		"store unlisted": {node(true), &facts.Node{Images: map[string]*facts.ImageStore{"docker": {Error: "permission denied"}}}, StatusError, "", "permission denied"},
		"no facts":       {node(true), nil, StatusError, "", "no probe facts"},
		"unlocked":       {node(false), docker(), StatusSkip, "", "run gpuform lock"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := checkImageDigests(Expectation{KB: testKB, Spec: tc.n}, tc.f, nil)
			if len(got) != 1 {
				t.Fatalf("%d results: %+v", len(got), got)
			}
			r := got[0]
			if r.ID != "container.image_digest."+ref || r.Status != tc.status || r.Observed != tc.observed || !strings.Contains(r.Message, tc.msg) {
				t.Errorf("%+v", r)
			}
		})
	}
}
