package spec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// imageDirPattern is an absolute directory without anything a shell or a
// file name built from it could read as syntax.
var imageDirPattern = lazyre.New(`^(/[A-Za-z0-9._\-]+)+$`)

// decodeImageDir reads image_dir: where enroot's and Apptainer's pulled
// image files live. Docker and containerd keep images in their own stores,
// so it is an error at the attribute on those runtimes, not ignored.
func decodeImageDir(dec *attrDecoder, runtime string) Attr[string] {
	a := dec.string("image_dir")
	if !a.Set {
		return a
	}
	if runtime != "enroot" && runtime != "apptainer" {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Setting of another runtime",
			Detail:   fmt.Sprintf("image_dir is where enroot and Apptainer keep pulled image files; this container block's runtime is %q, whose images live in its own store. Set runtime = \"enroot\" or \"apptainer\", or remove image_dir.", runtime),
			Subject:  a.Range.Ptr(),
		})
		return Attr[string]{}
	}
	if !imageDirPattern.MatchString(a.V) || strings.Contains(a.V, "/..") || strings.Contains(a.V, "/./") || strings.HasSuffix(a.V, "/.") {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid image directory",
			Detail:   fmt.Sprintf("image_dir = %s is not accepted: write an absolute directory of letters, digits and . _ - (\"/raid/containers\").", a.Show()),
			Subject:  a.Range.Ptr(),
		})
		return Attr[string]{}
	}
	return a
}
