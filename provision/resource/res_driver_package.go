package resource

import (
	"github.com/gpuform/gpuform/provision/facts"
)

// driverPackageReads declares what driver_package reads back on a node: the
// repository candidates of every branch's driver packages in apt's lists
// (resolveDriverRelease picks a floating version's release from them).
func driverPackageReads() facts.Reads {
	return facts.Reads{RepoPackages: []string{"cuda-drivers-[0-9]+", "nvidia-open", "nvidia-driver-pinning-[0-9]+"}}
}

// buildDriverPackage installs the driver the spec pins, resolved to an exact
// release for the host's package family. The new module is loaded at the
// next boot.
func buildDriverPackage(in *buildInput) ([]Resource, []string, error) {
	if !in.driverWanted() {
		return nil, nil, nil
	}
	flavour := string(in.n.Driver.KernelModule.V)
	from := ""
	if written := in.n.Driver.Version.V.Raw; written != in.driverVersion {
		from = written
	}
	return []Resource{&pkgResource{
		from:   from,
		base:   base{name: DriverPackage},
		family: in.family,
		set:    driverSet(in.kb, in.family, flavour, in.driverVersion),
		reboot: true,
		loaded: func(n *facts.Node) (string, bool) {
			if n.Driver == nil {
				return "", false
			}
			return n.Driver.Version, true
		},
	}}, nil, nil
}
