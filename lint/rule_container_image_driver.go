package lint

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/lint/compat"
)

// containerImageDriverRule declares container_image_driver.
func containerImageDriverRule() Rule {
	return Rule{
		Name:     "container_image_driver",
		Severity: Error,
		Summary:  "A container image (NGC PyTorch) needs a newer driver than the one pinned.",
		Check:    checkImageDriver,
	}
}

// imageRepoTag splits "nvcr.io/nvidia/pytorch:24.05-py3" into repository
// and tag ("" when untagged or pinned by digest only).
func imageRepoTag(image string) (repo, tag string) {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	slash := strings.LastIndex(image, "/")
	if i := strings.LastIndex(image, ":"); i > slash {
		return image[:i], image[i+1:]
	}
	return image, ""
}

func checkImageDriver(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.Container == nil {
			continue
		}
		drv, okD := nodeDriver(n)
		for _, img := range n.Container.Images {
			if !compat.IsNGCImage(img.V) {
				continue
			}
			im, ok := ctx.kb().NGCImage(img.V)
			if !ok {
				_, tag := imageRepoTag(img.V)
				if strings.HasPrefix(strings.ToLower(img.V), "nvcr.io/nvidia/pytorch:") && tag != "" {
					ctx.ReportAs(Warning, img.Range,
						fmt.Sprintf("%s: image %s is not in the knowledge base", nodeRef(n), img.V),
						"gpuform knows the driver requirements of NGC PyTorch releases in lint/compat/data/ngc-pytorch.tsv; this tag is not among them, so its driver requirement is not checked. Check the image's release notes (https://docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/) or suppress with a reason.")
				}
				continue
			}
			if !okD {
				continue
			}
			if im.MinDriverBranch > 0 && drv.Branch() < im.MinDriverBranch {
				if _, ok := datacenterException(im, drv); ok {
					// NVIDIA lists this older data-center driver as able to
					// run the image through forward compatibility.
					continue
				}
				f := im.MinDriverFact
				ctx.ReportAs(severityFor(f, Error), img.Range,
					fmt.Sprintf("%s: image %s needs driver R%d or later; driver %s is older", nodeRef(n), img.V, im.MinDriverBranch, drv),
					fmt.Sprintf("%s %s is built on CUDA %s and NVIDIA's release notes ask for driver %d or later%s (%s). Older drivers fail at the first CUDA call with \"driver version is insufficient\". Upgrade the driver or use an older image. %s",
						imageFamily(im), im.Release, orDash(im.CUDA), im.MinDriverBranch, exceptionText(im), cite(f), caveat(f)))
				continue
			}
			// Even when the release notes' branch sentence is met, the
			// image's CUDA has its own floor: a page that says "575 or
			// later" for a CUDA 13 image cannot lower CUDA 13's R580 floor.
			// No branch sentence in the table: judge by the CUDA in the image.
			if im.CUDA.IsZero() {
				continue
			}
			rel, ok := ctx.kb().CUDA(im.CUDA.Truncate(3))
			if !ok {
				continue
			}
			if rel.MVC.Check(drv) == compat.No {
				f := im.CUDAFact
				if rel.Status < f.Status {
					f = rel.Fact
				}
				ctx.ReportAs(severityFor(f, Error), img.Range,
					fmt.Sprintf("%s: image %s ships CUDA %s, which driver %s cannot run", nodeRef(n), img.V, im.CUDA, drv),
					fmt.Sprintf("CUDA %d.x needs at least driver branch R%s even through minor version compatibility (%s); the image's CUDA comes from %s. Upgrade the driver or use an older image. %s",
						im.CUDA.Major(), rel.MVC.Driver, cite(rel.MVC.Fact), cite(im.CUDAFact), caveat(f)))
			}
		}
	}
}

// datacenterException finds a data-center driver that NVIDIA lists as able
// to run the image through forward compatibility ("525.85+").
func datacenterException(im compat.NGCImage, drv compat.Version) (compat.DriverMinimum, bool) {
	for _, e := range im.DatacenterExceptions {
		if e.Driver.Branch() == drv.Branch() && e.Check(drv) == compat.Yes {
			return e, true
		}
	}
	return compat.DriverMinimum{}, false
}

func exceptionText(im compat.NGCImage) string {
	if len(im.DatacenterExceptions) == 0 {
		return ""
	}
	var s []string
	for _, e := range im.DatacenterExceptions {
		s = append(s, e.Driver.String()+"+")
	}
	return " (data-center exceptions: " + strings.Join(s, ", ") + ")"
}

// imageFamily names the NGC container family of an image for messages.
func imageFamily(im compat.NGCImage) string {
	switch {
	case strings.HasSuffix(im.Repository, "/tritonserver"):
		return "NGC Triton Inference Server"
	case strings.HasSuffix(im.Repository, "/pytorch"):
		return "NGC PyTorch"
	}
	return "NGC image"
}
