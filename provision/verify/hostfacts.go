package verify

import (
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/verify/dcgm"
	"github.com/gpuform/gpuform/provision/verify/kmsg"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
)

// HostFacts are the facts besides NVML that checks need.
type HostFacts struct {
	// NVMLError says why no NVML report could be read (agent failed and
	// the nvidia-smi fallback too); it fails nvml.facts.
	NVMLError string
	// FabricManagerActive is whether nvidia-fabricmanager is running; nil
	// when unknown.
	FabricManagerActive *bool
	// PeermemLoaded is whether the nvidia-peermem module is loaded; nil
	// when unknown.
	PeermemLoaded *bool
	// NCCL holds nccl-tests results by NCCLExpectation.Name; a test not in
	// the map was not run (tier) and is skipped.
	NCCL map[string]nccltest.Result
	// DCGM is the `dcgmi diag` run of the quick tier and deeper; nil when
	// it was not run (probe tier), which emits no DCGM check.
	DCGM *dcgm.Result
	// Catalogue supplies NCCL floors; nil means the embedded catalogue.
	Catalogue *Catalogue
	// Kernel is the kernel log's Xid and SXid lines; nil when it was not
	// read, which emits no kernel.xid check.
	Kernel *kmsg.Log
	// Facts is the probe's view of the host, which the spec's resources
	// are compared with (the spec.* checks); nil when it is unknown.
	Facts *facts.Node
	// Slurmd is what `slurmd -G` printed on an AutoDetect node; nil when
	// it was not run.
	Slurmd *SlurmdGRES
	// Tier is the tier this verify run went to; RunHost sets it. A check
	// the tier includes that did not run on the host (a multi-node run it
	// took no part in) is not run with Needed set, which fails the host;
	// one the tier leaves to a deeper tier is not run without it. ""
	// (a caller that does not say) is treated as the probe tier.
	Tier Tier
	// ImageContent is the sha256 of each pinned image file, by path, that
	// verify -tier full computed on the node (HashImageFiles); nil below
	// the full tier, where container.image_digest judges a file by its
	// name and identity only.
	ImageContent map[string]ImageContent
}

// HostFactsFromNode fills the host facts that the facts probe already
// gathered: whether nvidia-fabricmanager is active, whether the
// nvidia_peermem module is loaded, and the node itself for the spec.*
// checks. A nil node leaves both unknown (their
// checks then report an error rather than a guess). NVML, DCGM and NCCL
// results are added by the caller.
func HostFactsFromNode(n *facts.Node) HostFacts {
	h := HostFacts{Facts: n}
	if n == nil {
		return h
	}
	fm := n.Unit("nvidia-fabricmanager.service").Active == "active"
	peermem := n.HasModule("nvidia_peermem")
	h.FabricManagerActive = &fm
	h.PeermemLoaded = &peermem
	return h
}
