package lint

import (
	"fmt"
)

// affinityUnknownDeviceRule declares affinity_unknown_device.
func affinityUnknownDeviceRule() Rule {
	return Rule{
		Name:     "affinity_unknown_device",
		Severity: Error,
		Summary:  "gpu_nic names a GPU or NIC that is not in the hardware profile.",
		Check:    checkAffinityUnknown,
	}
}

func checkAffinityUnknown(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.Affinity == nil || n.Hardware == nil {
			continue
		}
		for _, gi := range sortedGPUNIC(n.Affinity) {
			nic := n.Affinity.GPUNIC[gi]
			if len(n.Hardware.GPUs) > 0 {
				if _, ok := n.Hardware.GPU(gi); !ok {
					ctx.Report(nic.Range,
						fmt.Sprintf("%s: gpu_nic pairs GPU %d, which the hardware does not have", nodeRef(n), gi),
						fmt.Sprintf("The hardware profile %q declares GPUs %s.", n.Hardware.Name, gpuIndexes(n.Hardware)))
				}
			}
			if _, ok := n.Hardware.NIC(nic.V); !ok {
				ctx.Report(nic.Range,
					fmt.Sprintf("%s: gpu_nic names NIC %q, which is not in the hardware profile", nodeRef(n), nic.V),
					fmt.Sprintf("%s. NCCL would be told to use a device that does not exist and falls back to sockets or fails at init. Use the RDMA device name as in /sys/class/infiniband.", nicNames(n.Hardware)))
			}
		}
	}
}
