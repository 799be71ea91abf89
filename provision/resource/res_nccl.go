package resource

import "github.com/gpuform/gpuform/provision/facts"

// ncclReads declares what nccl reads back on a node: nothing beyond the node
// facts every resource shares (packages, devices).
func ncclReads() facts.Reads { return facts.Reads{} }

// buildNCCL installs NCCL at the spec's version, built for the spec's CUDA.
func buildNCCL(in *buildInput) ([]Resource, []string, error) {
	n := in.n
	if n.NCCL == nil || !n.NCCL.Version.Set {
		return nil, nil, nil
	}
	return []Resource{&pkgResource{base: base{name: NCCL, deps: optional(in.cudaVersion != "", CUDAToolkit)}, family: in.family, set: ncclSet(in.kb, in.family, n.NCCL.Version.V.Raw, in.cudaVersion)}}, nil, nil
}
