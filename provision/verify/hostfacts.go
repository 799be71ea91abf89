package verify

import "github.com/gpuform/gpuform/provision/facts"

// HostFactsFromNode fills the host facts that the facts probe already
// gathered: whether nvidia-fabricmanager is active and whether the
// nvidia_peermem module is loaded. A nil node leaves both unknown (their
// checks then report an error rather than a guess). NVML, DCGM and NCCL
// results are added by the caller.
func HostFactsFromNode(n *facts.Node) HostFacts {
	var h HostFacts
	if n == nil {
		return h
	}
	fm := n.Unit("nvidia-fabricmanager.service").Active == "active"
	peermem := n.HasModule("nvidia_peermem")
	h.FabricManagerActive = &fm
	h.PeermemLoaded = &peermem
	return h
}
