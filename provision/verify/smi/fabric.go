package smi

import (
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// ParseFabric reads the "Fabric" sections of `nvidia-smi -q` text, one per
// GPU in the order printed, into the four fields NVML's fabric info holds
// (nvmlfacts.Fabric). The text is parsed by facts.ParseFabricText, the
// parser the facts probe uses when a domain is read from the node, so both
// read one nvidia-smi the same way.
func ParseFabric(text string) ([]nvmlfacts.Fabric, error) {
	gpus, err := facts.ParseFabricText(text)
	if err != nil {
		return nil, err
	}
	out := make([]nvmlfacts.Fabric, len(gpus))
	for i, g := range gpus {
		out[i] = nvmlfacts.Fabric{State: g.State, Status: g.Status, CliqueID: g.CliqueID, ClusterUUID: g.ClusterUUID}
	}
	return out, nil
}
