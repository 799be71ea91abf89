package plan

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// ImageSeverity is how much an image verdict weighs in the plan.
type ImageSeverity string

// Image verdict severities: kb.VerdictError and kb.VerdictWarning.
const (
	// ImageError: the image cannot run on the driver, on facts that may
	// fail a build.
	ImageError ImageSeverity = "error"
	// ImageWarning: the image may not run, or fails on facts too weak to
	// fail a build.
	ImageWarning ImageSeverity = "warning"
)

// DriverFrom says which driver an image verdict judged.
type DriverFrom string

const (
	// DriverPlanned is the release the plan's driver_package installs or
	// keeps.
	DriverPlanned DriverFrom = "planned"
	// DriverLoaded is the driver the host runs, for a node that pins none.
	DriverLoaded DriverFrom = "loaded"
)

// ImageVerdict is the knowledge base's verdict on one of the node's
// container images against the driver the host will run after apply and
// the host's GPUs. It is kb.ImageDriver's answer, the one lint's
// container_image_driver and verify's container.image_driver give, so the
// three never disagree about an image. Images the knowledge base has
// nothing against are not listed.
type ImageVerdict struct {
	// Image is the image reference as the spec writes it.
	Image string
	// Severity is the verdict.
	Severity ImageSeverity
	// Driver is the driver release judged ("535.183.06", or a branch
	// "570" the host's repositories did not resolve).
	Driver string
	// DriverFrom says whether Driver is the planned or the loaded one.
	DriverFrom DriverFrom
	// GPU is the GPU model the class was taken from; "" when not known.
	GPU string
	// GPUClass is kb.GPUClass's name ("data-center GPU").
	GPUClass string
	// Message says which requirement the driver misses and why it is an
	// error or only a warning.
	Message string
	// Source is where the fact the verdict rests on comes from.
	Source string
}

// judgeImages gives the knowledge base's verdict on every NGC image of n
// against the driver the host runs once changes are applied.
func judgeImages(k *kb.KB, n *spec.Node, f *facts.Node, changes []ResourceChange) []ImageVerdict {
	if n.Container == nil || len(n.Container.Images) == 0 {
		return nil
	}
	drvText, from := plannedDriver(f, changes)
	if drvText == "" {
		return nil
	}
	drv, err := kb.ParseDriverVersion(drvText)
	if err != nil {
		// A driver the knowledge base cannot read is judged by nobody;
		// lint says so about the spec's value.
		return nil
	}
	gpu, class := hostGPUClass(k, n, f)
	var out []ImageVerdict
	for _, img := range n.Container.Images {
		im, ok := k.NGCImage(img.V)
		if !ok {
			continue
		}
		ans := k.ImageDriver(im, drv, class)
		if ans.Verdict == kb.VerdictNone {
			continue
		}
		v := ImageVerdict{Image: img.V, Severity: ImageWarning, Driver: drv.String(), DriverFrom: from, GPU: gpu,
			GPUClass: class.String(), Message: imageVerdictMessage(im, drv, from, ans), Source: ans.Fact.Source()}
		if ans.Verdict == kb.VerdictError {
			v.Severity = ImageError
		}
		out = append(out, v)
	}
	return out
}

// plannedDriver is the driver the host runs after apply: the release
// driver_package installs or keeps, else (a node that pins no driver) the
// loaded one.
func plannedDriver(f *facts.Node, changes []ResourceChange) (string, DriverFrom) {
	for _, rc := range changes {
		if rc.Resource != resource.DriverPackage || rc.Action == resource.Delete {
			continue
		}
		if v, ok := rc.After["version"]; ok && !v.Sensitive && v.Text != "" {
			// A package revision ("-0ubuntu1") is not part of the driver
			// release the knowledge base compares.
			rel, _, _ := strings.Cut(v.Text, "-")
			return rel, DriverPlanned
		}
		return "", ""
	}
	if f.Driver != nil && f.Driver.Version != "" {
		return f.Driver.Version, DriverLoaded
	}
	return "", ""
}

// hostGPUClass names the host's GPUs from the PCI bus (or, where the bus
// shows none the knowledge base knows, the spec's hardware block) and
// returns their forward-compatibility class; GPUs of different classes
// make the class unknown.
func hostGPUClass(kbase *kb.KB, n *spec.Node, f *facts.Node) (string, kb.GPUClass) {
	var models []string
	seen := map[string]bool{}
	for _, d := range f.PCI {
		if d.Kind != facts.KindGPU {
			continue
		}
		if g, ok := kbase.GPUByPCIID(d.Device); ok && !seen[g.Model.Name] {
			seen[g.Model.Name] = true
			models = append(models, g.Model.Name)
		}
	}
	if len(models) == 0 && n.Hardware != nil && n.Hardware.GPUModel != "" {
		models = []string{n.Hardware.GPUModel}
	}
	if len(models) == 0 {
		return "", kb.GPUClassUnknown
	}
	class, _ := kbase.GPUClassOf(models[0])
	for _, m := range models[1:] {
		if c, _ := kbase.GPUClassOf(m); c != class {
			return strings.Join(models, ", "), kb.GPUClassUnknown
		}
	}
	return strings.Join(models, ", "), class
}

// imageVerdictMessage says which requirement the driver misses and what
// the verdict rests on, in the terms lint and verify use.
func imageVerdictMessage(im kb.NGCImage, drv kb.Version, from DriverFrom, ans kb.ImageDriverAnswer) string {
	which := "the planned driver"
	if from == DriverLoaded {
		which = "the loaded driver"
	}
	msg := fmt.Sprintf("image %s needs driver R%d or later (NVIDIA's release notes); %s %s is older", im.Image, im.MinDriverBranch, which, drv)
	if ans.Reason == kb.ReasonBelowCUDAFloor {
		msg = fmt.Sprintf("image %s ships CUDA %s, which needs driver branch R%d or later even through minor version compatibility; %s %s is older",
			im.Image, im.CUDA, ans.Floor.Driver.Branch(), which, drv)
	}
	switch {
	case ans.Class == kb.GPUClassOther:
		msg += " (this GPU has no CUDA forward compatibility, so no data-center exception applies)"
	case ans.ExceptionsUnknown:
		msg += " (on a data-center GPU a forward-compatibility exception may apply, but the knowledge base does not list them for this image)"
	case ans.HasException && ans.Class == kb.GPUClassUnknown:
		msg += fmt.Sprintf(" (NVIDIA lists %s+ as a forward-compatibility exception, which holds only on data-center GPUs; the GPU's class is not known)", ans.Exception.Driver)
	case ans.HasException && ans.Verdict == kb.VerdictWarning:
		msg += fmt.Sprintf(" (NVIDIA lists %s+ as a data-center exception, %s in the knowledge base)", ans.Exception.Driver, ans.Exception.Status)
	case ans.Class == kb.GPUClassUnknown && ans.Verdict == kb.VerdictWarning:
		msg += " (on a data-center GPU a forward-compatibility exception may apply; the GPU's class is not known)"
	case ans.Verdict == kb.VerdictWarning:
		msg += fmt.Sprintf(" (this rests on facts the knowledge base marks %s, which may not fail a build)", ans.Fact.Status)
	}
	if ans.Verdict == kb.VerdictError {
		msg += ": it fails at its first CUDA call (\"driver version is insufficient\"); upgrade the driver or use an older image"
	}
	return msg
}
