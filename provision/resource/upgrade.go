package resource

import (
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
)

// UpgradePackage returns the package whose versions carry the release of
// a lock file component ("driver", "cuda", "nccl", "dcgm",
// "nvidia_container_toolkit", "enroot", "pyxis", "apptainer") of node n on a host of the package family
// ("debian", "rhel"), at the floating version the spec asks for: the
// package gpuform would install, which lock -upgrade asks the host's
// package manager about. ok is false for a component the node does not
// declare or one gpuform installs no package for.
func UpgradePackage(k *kb.KB, n *spec.Node, comp spec.Component, family string) (string, bool) {
	if family != FamilyDebian && family != FamilyRHEL {
		return "", false
	}
	cuda := ""
	if n.CUDA != nil && n.CUDA.Version.Set {
		cuda = n.CUDA.Version.V.Raw
	}
	var s pkgSet
	switch comp {
	case spec.ComponentDriver:
		if n.Driver == nil || !n.Driver.Version.Set {
			return "", false
		}
		s = driverSet(k, family, string(n.Driver.KernelModule.V), n.Driver.Version.V.Raw)
	case spec.ComponentCUDA:
		if cuda == "" {
			return "", false
		}
		s = cudaSet(k, family, cuda)
	case spec.ComponentNCCL:
		if n.NCCL == nil || !n.NCCL.Version.Set {
			return "", false
		}
		s = ncclSet(k, family, n.NCCL.Version.V.Raw, cuda)
	case spec.ComponentDCGM:
		if n.DCGM == nil || !n.DCGM.Version.Set {
			return "", false
		}
		s = dcgmSet(k, family, n.DCGM.Version.V.Raw, cuda)
	case spec.ComponentContainerToolkit:
		if n.Container == nil || !n.Container.NvidiaContainerToolkit.Set {
			return "", false
		}
		s = containerToolkitSet(k, family, n.Container.NvidiaContainerToolkit.V.Raw)
	case spec.ComponentEnroot, spec.ComponentPyxis, spec.ComponentApptainer:
		a, ok := spec.NodeVersions(n)[comp]
		if !ok {
			return "", false
		}
		s = runtimeSet(k, comp, family, "", a.V.Raw, string(comp))
	default:
		return "", false
	}
	if len(s.names) == 0 {
		return "", false
	}
	return s.names[0], true
}

// Upstream is a package version without its epoch and package revision
// ("1:4.6.0-1" → "4.6.0"), the release a lock file records.
func Upstream(v string) string { return upstream(v) }
