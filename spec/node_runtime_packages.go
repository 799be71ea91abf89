package spec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// decodeRuntimePackages reads the package releases of the enroot, pyxis
// and Apptainer runtimes. Each belongs to one runtime: a release of
// another runtime's package is an error at its attribute, as the other
// runtime settings are, since installing it would be a silent surprise.
func decodeRuntimePackages(dec *attrDecoder, c *Container) {
	c.EnrootVersion = dec.version("enroot_version")
	c.EnrootCaps = dec.bool("enroot_caps")
	c.PyxisVersion = dec.version("pyxis_version")
	c.ApptainerVersion = dec.version("apptainer_version")
	for _, a := range []struct {
		name, runtime string
		set           bool
		rng           hcl.Range
	}{
		{"enroot_version", "enroot", c.EnrootVersion.Set, c.EnrootVersion.Range},
		{"enroot_caps", "enroot", c.EnrootCaps.Set, c.EnrootCaps.Range},
		{"pyxis_version", "enroot", c.PyxisVersion.Set, c.PyxisVersion.Range},
		{"apptainer_version", "apptainer", c.ApptainerVersion.Set, c.ApptainerVersion.Range},
	} {
		if a.set && c.Runtime.V != a.runtime {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Setting of another runtime",
				Detail:   fmt.Sprintf("%s installs a package of the %s runtime; this container block's runtime is %q. Set runtime = %q or remove it.", a.name, a.runtime, c.Runtime.V, a.runtime),
				Subject:  a.rng.Ptr(),
			})
		}
	}
	if c.EnrootCaps.Set && !c.EnrootVersion.Set && c.Runtime.V == "enroot" {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "enroot_caps without enroot_version",
			Detail:   "enroot_caps installs enroot+caps, which must be at exactly the release of enroot: set enroot_version too.",
			Subject:  c.EnrootCaps.Range.Ptr(),
		})
	}
	if !c.PyxisVersion.Set || c.Runtime.V != "enroot" {
		return
	}
	// Installing pyxis is asking Slurm to load it: pyxis_version implies
	// pyxis = true, and contradicts pyxis = false.
	if c.Pyxis.Set && !c.Pyxis.V {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "pyxis_version with pyxis = false",
			Detail:   "pyxis_version installs pyxis for Slurm to load; pyxis = false says not to load it. Remove one of them.",
			Subject:  c.Pyxis.Range.Ptr(),
		})
		return
	}
	if !c.Pyxis.Set {
		c.Pyxis = Attr[bool]{V: true, Set: true, Range: c.PyxisVersion.Range}
	}
}
