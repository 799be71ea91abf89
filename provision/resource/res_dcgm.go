package resource

import "github.com/gpuform/gpuform/provision/facts"

// dcgmReads declares what dcgm reads back on a node: the host engine's unit.
func dcgmReads() facts.Reads {
	return facts.Reads{Units: []string{"nvidia-dcgm.service"}}
}

// buildDCGM installs DCGM at the spec's version and runs its host engine.
func buildDCGM(in *buildInput) ([]Resource, []string, error) {
	n := in.n
	if n.DCGM == nil || !n.DCGM.Version.Set {
		return nil, nil, nil
	}
	return []Resource{&pkgResource{
		base:     base{name: DCGM, deps: optional(in.driverVersion != "", DriverPackage)},
		family:   in.family,
		set:      dcgmSet(in.kb, in.family, n.DCGM.Version.V.Raw, in.cudaVersion),
		services: []string{"nvidia-dcgm.service"},
		// nv-hostengine fails on NVML's "driver/library version
		// mismatch" until the new driver is loaded.
		afterReboot: in.afterReboot,
	}}, nil, nil
}
