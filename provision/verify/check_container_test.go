//go:build cgo

package verify

import (
	"testing"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/spec"
)

// imageNode is a node block that runs images, for the container checks.
func imageNode(images ...string) *spec.Node {
	c := &spec.Container{}
	for _, im := range images {
		c.Images = append(c.Images, spec.Attr[string]{V: im, Set: true})
	}
	return &spec.Node{Name: "n", Container: c}
}

// TestImageDriverCheckAgrees walks every NGC image of the knowledge base
// against drivers of several branches on an H100 node and checks verify's
// verdict is the knowledge base's (the one lint's container_image_driver
// uses): fail exactly on an error, a reason on a warning.
func TestImageDriverCheckAgrees(t *testing.T) {
	kbase := testKB
	rep := collectMock(t, nvmlfacts.MockDGXH100)
	class, _ := kbase.GPUClassOf(rep.GPUs[0].Name)
	warnings := 0
	for _, im := range kbase.NGCImages() {
		for _, d := range []string{"470.57.02", "525.60.13", "535.183.06", "550.54.15", "570.86.15", "580.95.05"} {
			r := *rep
			r.DriverVersion = d
			got := checkImages(Expectation{KB: testKB, Spec: imageNode(im.Image)}, &r)
			if len(got) != 1 {
				t.Fatalf("%s on %s: %d results", im.Image, d, len(got))
			}
			drv, _ := kb.ParseDriverVersion(d)
			ans := kbase.ImageDriver(im, drv, class)
			want := StatusPass
			if ans.Verdict == kb.VerdictError {
				want = StatusFail
			}
			if got[0].Status != want {
				t.Errorf("%s on driver %s: %s, the knowledge base says %v (%s)", im.Image, d, got[0].Status, ans.Verdict, got[0].Message)
			}
			if ans.Verdict != kb.VerdictNone && got[0].Message == "" {
				t.Errorf("%s on driver %s: no reason given", im.Image, d)
			}
			if ans.Verdict == kb.VerdictWarning {
				warnings++
			}
		}
	}
	if warnings == 0 {
		t.Error("no image/driver pair gave a verdict: the check judged nothing")
	}
}

func TestImageDriverCheckScope(t *testing.T) {
	rep := collectMock(t, nvmlfacts.MockDGXH100)
	if got := checkImages(Expectation{KB: testKB, Spec: imageNode("docker.io/library/ubuntu:24.04", "nvcr.io/nvidia/pytorch:25.02-py3")}, rep); len(got) != 1 || got[0].ID != "container.image_driver.nvcr.io/nvidia/pytorch:25.02-py3" {
		t.Errorf("only known NGC images are judged: %+v", got)
	}
	if got := checkImages(Expectation{KB: testKB, Spec: imageNode("nvcr.io/nvidia/pytorch:25.02-py3")}, nil); got != nil {
		t.Errorf("no NVML report, yet judged: %+v", got)
	}
}
