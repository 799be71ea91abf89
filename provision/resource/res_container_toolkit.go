package resource

import "github.com/gpuform/gpuform/provision/facts"

// containerToolkitReads declares what container_toolkit reads back on a
// node: nothing beyond the node facts every resource shares (packages,
// devices).
func containerToolkitReads() facts.Reads { return facts.Reads{} }

// buildContainerToolkit installs the NVIDIA Container Toolkit at the
// spec's version.
func buildContainerToolkit(in *buildInput) ([]Resource, []string, error) {
	c := in.n.Container
	if c == nil || !c.NvidiaContainerToolkit.Set {
		return nil, nil, nil
	}
	return []Resource{&pkgResource{base: base{name: ContainerToolkit, deps: optional(in.driverVersion != "", DriverPackage)}, family: in.family, set: containerToolkitSet(in.kb, in.family, c.NvidiaContainerToolkit.V.Raw)}}, nil, nil
}
