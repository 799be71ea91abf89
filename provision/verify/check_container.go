package verify

import (
	"fmt"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/spec"
)

// checkImages judges each NGC image the spec runs against the driver the
// node has loaded and its GPUs, with the knowledge base's one decision
// (kb.ImageDriver) that lint's container_image_driver also uses: lint
// judges the pinned driver before anything is applied, verify the driver
// that actually runs.
func checkImages(exp Expectation, rep *nvmlfacts.Report) []CheckResult {
	if exp.Spec == nil || exp.Spec.Container == nil || rep == nil {
		return nil
	}
	kbase := exp.KB
	var out []CheckResult
	for _, img := range exp.Spec.Container.Images {
		im, ok := kbase.NGCImage(img.V)
		if !ok {
			continue
		}
		r := CheckResult{ID: CheckImageDriver.Named(imageName(exp.Spec, img.V)), Observed: "driver " + rep.DriverVersion,
			Expected: fmt.Sprintf("driver R%d or later for %s (CUDA %s)", im.MinDriverBranch, img.V, im.CUDA)}
		drv, err := kb.ParseDriverVersion(rep.DriverVersion)
		if err != nil {
			r.Status, r.Message = StatusError, fmt.Sprintf("the loaded driver version %q cannot be read", rep.DriverVersion)
			out = append(out, r)
			continue
		}
		class := kb.GPUClassUnknown
		if len(rep.GPUs) > 0 {
			class, _ = kbase.GPUClassOf(rep.GPUs[0].Name)
		}
		ans := kbase.ImageDriver(im, drv, class)
		switch ans.Verdict {
		case kb.VerdictError:
			r.Status = StatusFail
			r.Message = imageDriverMessage(im, drv, ans) + "; the image fails at its first CUDA call (\"driver version is insufficient\"): upgrade the driver or use an older image"
		case kb.VerdictWarning:
			r.Status = StatusPass
			r.Message = "may not run: " + imageDriverMessage(im, drv, ans)
		default:
			r.Status = StatusPass
		}
		out = append(out, r)
	}
	return out
}

// imageDriverMessage says which requirement the loaded driver misses and
// what the answer rests on.
func imageDriverMessage(im kb.NGCImage, drv kb.Version, ans kb.ImageDriverAnswer) string {
	msg := fmt.Sprintf("driver %s is older than the R%d the image's release notes ask for", drv, im.MinDriverBranch)
	if ans.Reason == kb.ReasonBelowCUDAFloor {
		msg = fmt.Sprintf("CUDA %d.x needs at least driver branch R%d, and driver %s is older", im.CUDA.Major(), ans.Floor.Driver.Branch(), drv)
	}
	switch {
	case ans.Class == kb.GPUClassOther:
		msg += " (this GPU has no CUDA forward compatibility)"
	case ans.ExceptionsUnknown:
		msg += " (a data-center forward-compatibility exception may apply, but the knowledge base does not list them for this image)"
	case ans.HasException:
		msg += fmt.Sprintf(" (NVIDIA lists %s+ as a data-center exception, %s in the knowledge base)", ans.Exception.Driver, ans.Exception.Status)
	}
	if src := ans.Fact.Source(); src != "" {
		msg += "; source: " + src
	}
	return msg
}

// checkImageDigests checks that the node holds every pinned image, under
// its tag, at the pinned digest: a job that runs the tag gets exactly the
// locked build. A node whose tag points to another digest (someone pulled
// the tag after it moved in the registry) fails with both digests.
//
// An image file (enroot, Apptainer) is judged by its name and its
// identity in the ledger below the full tier, which says so in observed;
// at the full tier (content non-nil) its content's sha256 must be the one
// the ledger recorded at pull time.
func checkImageDigests(exp Expectation, f *facts.Node, content map[string]ImageContent) []CheckResult {
	if exp.Spec == nil {
		return nil
	}
	pinned, unlocked := resource.PinnedImages(exp.Spec)
	runtime := resource.ImageRuntime(exp.Spec)
	var out []CheckResult
	for _, im := range pinned {
		r := CheckResult{ID: CheckImageDigest.Named(imageName(exp.Spec, im.Ref)), Expected: im.Digest}
		var store *facts.ImageStore
		if f != nil {
			store = resource.NodeImages(exp.Spec, f)
		}
		switch {
		case f == nil:
			r.Status, r.Message = StatusError, "no probe facts: the node's images are unknown"
		case store == nil && (runtime == facts.RuntimeEnroot || runtime == facts.RuntimeApptainer):
			r.Status, r.Observed = StatusFail, "absent"
			r.Message = fmt.Sprintf("gpuform has pulled no %s image onto the node (%s lists no directory); gpuform apply pulls %s into image_dir", runtime, facts.ImageDirsFile, im.Ref)
		case store == nil:
			r.Status, r.Observed = StatusFail, "absent"
			r.Message = fmt.Sprintf("%s is not running on the node (no daemon socket), so it holds no image; gpuform apply pulls %s", runtime, im.Ref)
		case store.NotRun != "":
			// Not known is neither absent nor held: the gate does not
			// pass it.
			r.Status, r.Needed, r.Observed = StatusNotRun, true, "not asked"
			r.Message = fmt.Sprintf("not run: the node's %s images could not be asked from here: %s", runtime, store.NotRun)
		case store.Error != "":
			r.Status, r.Message = StatusError, fmt.Sprintf("the %s images cannot be listed: %s", runtime, store.Error)
		default:
			d := resource.NodeDigest(store, im)
			r.Observed = d
			switch d {
			case im.Digest:
				r.Status = StatusPass
				if runtime == facts.RuntimeEnroot || runtime == facts.RuntimeApptainer {
					judgeImageContent(&r, exp, store, im, content)
				}
			case "":
				r.Status, r.Observed = StatusFail, "absent"
				r.Message = fmt.Sprintf("%s holds no %s at the pinned digest; gpuform apply pulls it", runtime, im.Ref)
				if runtime == facts.RuntimeEnroot || runtime == facts.RuntimeApptainer {
					r.Message = fmt.Sprintf("image_dir holds no %s file of %s at the pinned digest (%s); gpuform apply pulls it", runtime, im.Ref, facts.ImageFileName(im.Repo, im.Digest, runtime))
					if unverifiedFile(f.Images[runtime], exp.Spec, im) {
						r.Observed = "unverified"
						r.Message = fmt.Sprintf("image_dir holds %s under the pinned digest's name, but gpuform did not pull it on this node, or it changed since (its identity is not the one %s recorded): the name proves nothing about its content; gpuform apply pulls the pinned image again", facts.ImageFileName(im.Repo, im.Digest, runtime), facts.ImageFilesLedger)
					}
				}
			default:
				r.Status = StatusFail
				r.Message = fmt.Sprintf("the tag now points elsewhere: %s on the node is %s, not the pinned %s; gpuform apply pulls the pinned image and points the tag back at it (gpuform lock -upgrade first if the new build is wanted)", im.Ref, d, im.Digest)
			}
		}
		out = append(out, r)
	}
	for _, ref := range unlocked {
		out = append(out, CheckResult{ID: CheckImageDigest.Named(imageName(exp.Spec, ref)), Status: StatusSkip, Expected: "a pinned digest",
			Message: "the lock file records no digest for this tag; run gpuform lock"})
	}
	return out
}

// imageName is how a check id names image ref: the reference itself, or,
// when the reference comes from a sensitive value, "image-N" for its place
// (from 1) in container.images. An id is printed everywhere (text, JSON,
// JUnit test names, Prometheus labels) and cannot be redacted after the
// fact without colliding, so it must not carry the value. An index, not a
// hash: a hash of a short secret (a tag such as "24.05") is undone by
// hashing the few candidates, while an index says nothing about the value
// and stays the same from run to run as long as the list does.
func imageName(n *spec.Node, ref string) string {
	if n == nil || n.Container == nil {
		return ref
	}
	for i, img := range n.Container.Images {
		if img.V == ref && img.Sensitive {
			return fmt.Sprintf("image-%d", i+1)
		}
	}
	return ref
}

// unverifiedFile reports whether store holds, in n's image_dir, a file
// under im's digest name that gpuform did not pull (facts.LocalImage's
// Unverified).
func unverifiedFile(store *facts.ImageStore, n *spec.Node, im resource.ImageRef) bool {
	if store == nil || n.Container == nil || !n.Container.ImageDir.Set {
		return false
	}
	want := n.Container.ImageDir.V + "/" + facts.ImageFileName(im.Repo, im.Digest, resource.ImageRuntime(n))
	for _, li := range store.Images {
		if li.ID == want && li.Unverified {
			return true
		}
	}
	return false
}

// judgeImageContent judges the content of the image file a passing
// container.image_digest found under im's digest name. Below the full
// tier (content nil) it stays a pass on name and identity, and observed
// says the content was not hashed. At the full tier the file's sha256 must
// be the one the ledger recorded when gpuform pulled it; a file whose
// hash could not be computed in time, or whose ledger entry has none, is
// an error, never a pass. On shared storage (image_dir_shared) a file
// another node pulled has no entry here: the spec accepted its name.
func judgeImageContent(r *CheckResult, exp Expectation, store *facts.ImageStore, im resource.ImageRef, content map[string]ImageContent) {
	li := resource.NodeFile(exp.Spec, store, im)
	if li == nil {
		return
	}
	shared := exp.Spec.Container.ImageDirShared.V
	if content == nil {
		r.Observed += " (name and identity only: content not hashed at this tier; verify -tier full hashes it)"
		return
	}
	if li.ContentSHA256 == "" && (shared || li.Unverified) {
		r.Observed += " (shared storage: taken by its name; no content hash recorded on this node)"
		return
	}
	if li.ContentSHA256 == "" {
		r.Status = StatusError
		r.Message = fmt.Sprintf("%s: no recorded content hash: re-pull with gpuform apply (the entry in %s predates recorded hashes)", li.ID, facts.ImageFilesLedger)
		return
	}
	got, ok := content[li.ID]
	switch {
	case !ok:
		r.Status, r.Message = StatusError, fmt.Sprintf("%s was not hashed", li.ID)
	case got.Error != "":
		r.Status, r.Message = StatusError, got.Error
	case got.SHA256 != li.ContentSHA256:
		r.Status, r.Observed = StatusFail, "content sha256:"+got.SHA256
		r.Message = fmt.Sprintf("%s changed since gpuform pulled it: its content's sha256 is %s, not the sha256:%s %s recorded at the pull (its size and modification time were kept, so only its content tells): remove it, and gpuform apply pulls the pinned image again", li.ID, got.SHA256, li.ContentSHA256, facts.ImageFilesLedger)
	default:
		r.Observed += " (content sha256:" + got.SHA256 + ", as pulled)"
	}
}
