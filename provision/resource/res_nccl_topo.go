package resource

import (
	"fmt"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nccltopo"
)

// ncclTopoReads declares what nccl_topo reads back on a node: the pending
// marker of an interrupted write (in pendingDir) and the NCCL topology file.
func ncclTopoReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{nccltopo.File}, ManagedDirs: []string{pendingDir}}
}

// buildNCCLTopo writes the NCCL topology file from the hardware
// description where the spec asks for it (affinity { nccl_topo_file })
// and the host is a VM whose PCI tree hides the GPU–NIC layout; nccl.conf
// points NCCL_TOPO_FILE at it (buildNCCLConf). Anywhere else it removes a
// file gpuform wrote earlier, and plan says why it is not written.
func buildNCCLTopo(in *buildInput) ([]Resource, []string, error) {
	write, why := nccltopo.Decide(in.n, in.f)
	if !write {
		var warnings []string
		if why != "" {
			warnings = append(warnings, fmt.Sprintf("%s not written: %s", nccltopo.File, why))
		}
		return []Resource{absentFile(NCCLTopo, nccltopo.File)}, warnings, nil
	}
	content, err := nccltopo.Render(in.n.Hardware, in.f, "gpuform: NCCL topology of this VM from the spec's hardware description; change the spec, not this file")
	if err != nil {
		return []Resource{absentFile(NCCLTopo, nccltopo.File)}, []string{fmt.Sprintf("%s not written: %v", nccltopo.File, err)}, nil
	}
	return []Resource{&fileResource{
		base:    base{name: NCCLTopo},
		path:    nccltopo.File,
		content: content,
		current: managedFile(nccltopo.File),
		attrs: func(_ *facts.Node, cur string, exists bool) Values {
			if !exists {
				return Values{}
			}
			return Values{"content": StringVal("sha256:" + shortSum(cur))}
		},
		desired: Values{"content": StringVal("sha256:" + shortSum(content))},
	}}, nil, nil
}
