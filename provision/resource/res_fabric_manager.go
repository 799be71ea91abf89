package resource

import "github.com/gpuform/gpuform/provision/facts"

// fabricManagerReads declares what fabric_manager reads back on a node: the
// fabric manager's unit, and every branch's package among apt's repository
// candidates.
func fabricManagerReads() facts.Reads {
	return facts.Reads{Units: []string{"nvidia-fabricmanager.service"}, RepoPackages: []string{"nvidia-fabricmanager-[0-9]+"}}
}

// buildFabricManager installs and runs NVIDIA Fabric Manager at the
// driver's release, when the driver block asks for it.
func buildFabricManager(in *buildInput) ([]Resource, []string, error) {
	if !in.driverWanted() || !in.n.Driver.FabricManager.V {
		return nil, nil, nil
	}
	return []Resource{&pkgResource{
		base:     base{name: FabricManager, deps: []string{DriverPackage}},
		family:   in.family,
		set:      fabricManagerSet(in.kb, in.family, in.driverVersion),
		services: []string{"nvidia-fabricmanager.service"},
		// Fabric manager refuses to run against another driver release.
		afterReboot: in.afterReboot,
	}}, nil, nil
}
