package lint

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
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
			if !kb.IsNGCImage(img.V) {
				continue
			}
			im, ok := ctx.kb().NGCImage(img.V)
			if !ok {
				_, tag := imageRepoTag(img.V)
				if strings.HasPrefix(strings.ToLower(img.V), "nvcr.io/nvidia/pytorch:") && tag != "" {
					ctx.ReportAs(Warning, img.Range,
						fmt.Sprintf("%s: image %s is not in the knowledge base", nodeRef(n), img.V),
						"gpuform knows the driver requirements of NGC PyTorch releases in kb/data/ngc-pytorch.tsv; this tag is not among them, so its driver requirement is not checked. Check the image's release notes (https://docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/) or suppress with a reason.")
				}
				continue
			}
			if !okD {
				continue
			}
			class := nodeGPUClass(ctx, n)
			ans := ctx.kb().ImageDriver(im, drv, class)
			if ans.Verdict == kb.VerdictNone {
				continue
			}
			ctx.ReportAs(verdictSeverity(ans.Verdict), img.Range, imageDriverSummary(n, img.V, im, drv, ans), imageDriverDetail(im, ans))
		}
	}
}

// nodeGPUClass is the forward-compatibility class of the node's GPU
// (unknown without hardware).
func nodeGPUClass(ctx *Context, n *spec.Node) kb.GPUClass {
	if n.Hardware == nil || n.Hardware.GPUModel == "" {
		return kb.GPUClassUnknown
	}
	c, _ := ctx.kb().GPUClassOf(n.Hardware.GPUModel)
	return c
}

// verdictSeverity maps compat's decision onto a finding's severity; the
// verdict already honours the status of every fact it rests on.
func verdictSeverity(v kb.Verdict) Severity {
	if v == kb.VerdictError {
		return Error
	}
	return Warning
}

func imageDriverSummary(n *spec.Node, ref string, im kb.NGCImage, drv kb.Version, ans kb.ImageDriverAnswer) string {
	if ans.Reason == kb.ReasonBelowCUDAFloor {
		can := "cannot"
		if ans.Verdict == kb.VerdictWarning {
			can = "may not"
		}
		return fmt.Sprintf("%s: image %s ships CUDA %s, which driver %s %s run", nodeRef(n), ref, im.CUDA, drv, can)
	}
	if ans.Verdict == kb.VerdictWarning && ans.Class != kb.GPUClassOther {
		return fmt.Sprintf("%s: image %s may not run on driver %s", nodeRef(n), ref, drv)
	}
	return fmt.Sprintf("%s: image %s needs driver R%d or later; driver %s is older", nodeRef(n), ref, im.MinDriverBranch, drv)
}

func imageDriverDetail(im kb.NGCImage, ans kb.ImageDriverAnswer) string {
	var b strings.Builder
	switch ans.Reason {
	case kb.ReasonBelowCUDAFloor:
		fmt.Fprintf(&b, "CUDA %d.x needs at least driver branch R%d even through minor version compatibility (%s); the image's CUDA comes from %s.",
			im.CUDA.Major(), ans.Floor.Driver.Branch(), cite(ans.Floor.Fact), cite(im.CUDAFact))
	default:
		fmt.Fprintf(&b, "%s %s is built on CUDA %s and NVIDIA's release notes ask for driver %d or later%s (%s). Older drivers fail at the first CUDA call with \"driver version is insufficient\".",
			imageFamily(im), im.Release, orDash(im.CUDA), im.MinDriverBranch, exceptionText(im), cite(im.MinDriverFact))
	}
	switch {
	case ans.Class == kb.GPUClassOther:
		b.WriteString(" This GPU has no CUDA forward compatibility, so no data-center exception applies.")
	case ans.ExceptionsUnknown:
		b.WriteString(" On a data-center GPU the image may still run through CUDA forward compatibility, but the knowledge base does not know which older drivers NVIDIA lists for it, so this is not an error.")
	case ans.HasException && ans.Verdict == kb.VerdictWarning && ans.Class == kb.GPUClassUnknown:
		fmt.Fprintf(&b, " NVIDIA lists %s+ as a forward-compatibility exception, which holds only on data-center GPUs; the GPU's class is not known.", ans.Exception.Driver)
	case ans.HasException && ans.Verdict == kb.VerdictWarning:
		fmt.Fprintf(&b, " NVIDIA lists %s+ as a forward-compatibility exception for data-center GPUs, but that entry is %s in the knowledge base (%s).", ans.Exception.Driver, ans.Exception.Status, cite(ans.Exception.Fact))
	case ans.Verdict == kb.VerdictWarning && ans.Class == kb.GPUClassUnknown:
		b.WriteString(" On a data-center GPU a forward-compatibility exception may apply; the GPU's class is not known.")
	}
	b.WriteString(" Upgrade the driver or use an older image.")
	if c := caveat(ans.Fact); c != "" {
		b.WriteString(" " + c)
	}
	return b.String()
}

func exceptionText(im kb.NGCImage) string {
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
func imageFamily(im kb.NGCImage) string {
	switch {
	case strings.HasSuffix(im.Repository, "/tritonserver"):
		return "NGC Triton Inference Server"
	case strings.HasSuffix(im.Repository, "/pytorch"):
		return "NGC PyTorch"
	}
	return "NGC image"
}
