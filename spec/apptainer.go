package spec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// ApptainerSettings are the directives of Apptainer's apptainer.conf that
// decide how containers get the node's GPUs; each is set only where the
// spec gives it, the operator's other directives are left alone.
// Directive names and defaults: apptainer/apptainer
// pkg/util/apptainerconf/config.go (type File) at
// 917d66577963ca297352a22e13c86f1748ddc645.
type ApptainerSettings struct {
	// AlwaysUseNv is "always use nv": every run as if given --nv.
	AlwaysUseNv Attr[bool]
	// UseNvidiaContainerCLI is "use nvidia-container-cli": --nv sets the
	// GPUs up with nvidia-container-cli instead of binding nvliblist.conf.
	UseNvidiaContainerCLI Attr[bool]
	// AllowSetuid is "allow setuid": the setuid starter of an
	// apptainer-suid installation may be used.
	AllowSetuid Attr[bool]
	// MountDev is "mount dev": "yes", "minimal" or "no".
	MountDev Attr[string]
}

// Any reports whether the spec sets any Apptainer directive.
func (s ApptainerSettings) Any() bool {
	return s.AlwaysUseNv.Set || s.UseNvidiaContainerCLI.Set || s.AllowSetuid.Set || s.MountDev.Set
}

// decodeApptainer reads the Apptainer attributes of a container block; on
// another runtime each one given is an error at the attribute.
func decodeApptainer(dec *attrDecoder, runtime Attr[string]) ApptainerSettings {
	s := ApptainerSettings{
		AlwaysUseNv:           dec.bool("apptainer_always_use_nv"),
		UseNvidiaContainerCLI: dec.bool("apptainer_use_nvidia_container_cli"),
		AllowSetuid:           dec.bool("apptainer_allow_setuid"),
		MountDev:              dec.enum("apptainer_mount_dev", "yes", "minimal", "no"),
	}
	if runtime.V == "apptainer" {
		return s
	}
	for _, a := range []struct {
		name string
		set  bool
		rng  hcl.Range
	}{
		{"apptainer_always_use_nv", s.AlwaysUseNv.Set, s.AlwaysUseNv.Range},
		{"apptainer_use_nvidia_container_cli", s.UseNvidiaContainerCLI.Set, s.UseNvidiaContainerCLI.Range},
		{"apptainer_allow_setuid", s.AllowSetuid.Set, s.AllowSetuid.Range},
		{"apptainer_mount_dev", s.MountDev.Set, s.MountDev.Range},
	} {
		if a.set {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Setting of another runtime",
				Detail:   fmt.Sprintf("%s configures Apptainer; this container block's runtime is %q. Set runtime = \"apptainer\" or remove it.", a.name, runtime.V),
				Subject:  a.rng.Ptr(),
			})
		}
	}
	return ApptainerSettings{}
}
