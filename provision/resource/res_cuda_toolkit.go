package resource

import "github.com/gpuform/gpuform/provision/facts"

// cudaToolkitReads declares what cuda_toolkit reads back on a node: nothing
// beyond the node facts every resource shares (packages, devices).
func cudaToolkitReads() facts.Reads { return facts.Reads{} }

// buildCUDAToolkit installs the CUDA toolkit at the spec's version.
func buildCUDAToolkit(in *buildInput) ([]Resource, []string, error) {
	if in.cudaVersion == "" {
		return nil, nil, nil
	}
	return []Resource{&pkgResource{base: base{name: CUDAToolkit, deps: optional(in.driverVersion != "", DriverPackage)}, family: in.family, set: cudaSet(in.kb, in.family, in.cudaVersion)}}, nil, nil
}
