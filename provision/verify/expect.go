package verify

import (
	"strings"
	"time"

	"github.com/gpuform/gpuform/spec"
)

// ExpectationFor reads what a healthy host of node n looks like from its
// spec: the verify block, and what the rest of the node implies (the
// hardware's GPU count, model and interconnect; NUMA binds; GPU–NIC pairs;
// the pinned driver; fabric manager on NVSwitch; peermem when requested).
// A driver given as a branch ("580") is not checked: callers put the lock
// file's release in its place first (spec.ApplyLock).
func ExpectationFor(n *spec.Node) Expectation {
	var exp Expectation
	exp.Sensitive = sensitiveChecks(n)
	exp.Redactor = n.Redactor()
	t := true
	if hw := n.Hardware; hw != nil {
		exp.GPUCount = hw.GPUCount
		exp.GPUModel = modelToken(hw.GPUModel)
		switch hw.Interconnect {
		case "nvswitch":
			exp.Interconnect = InterconnectNVSwitch
			exp.NVLink = NVLinkAllActive
			exp.FabricManager = &t
		case "nvlink_bridge":
			exp.Interconnect = InterconnectNVLinkBridge
			exp.NVLink = NVLinkAllActive
		case "pcie":
			exp.Interconnect = InterconnectPCIe
			exp.NVLink = NVLinkNone
		}
	}
	if d := n.Driver; d != nil {
		if d.Version.Set && d.Version.V.IsExact() {
			exp.DriverVersion = d.Version.V.Raw
		}
		if d.PersistenceMode.Set {
			v := d.PersistenceMode.V
			exp.PersistenceMode = &v
		}
		if d.FabricManager.Set && d.FabricManager.V {
			exp.FabricManager = &t
		}
		if d.Peermem.Set && d.Peermem.V {
			exp.Peermem = &t
		}
	}
	exp.DCGM = n.DCGM != nil && n.DCGM.Version.Set
	if n.NUMA != nil {
		for _, b := range n.NUMA.Binds {
			for _, g := range b.GPUs {
				if exp.NUMANode == nil {
					exp.NUMANode = map[int]int{}
				}
				exp.NUMANode[g.V] = b.Node.V
			}
		}
	}
	if n.Affinity != nil && len(n.Affinity.GPUNIC) > 0 {
		exp.NIC = map[int]NICExpectation{}
		for gpu, nic := range n.Affinity.GPUNIC {
			exp.NIC[gpu] = NICExpectation{NIC: nic.V}
		}
	}
	if v := n.Verify; v != nil {
		if m := v.NVML; m != nil {
			if m.GPUs.Set {
				exp.GPUCount = m.GPUs.V
			}
			if m.ECC.Set {
				e := m.ECC.V
				exp.ECC = &e
			}
			exp.MinPCIeGen = m.MinPCIeGen.V
			exp.MinPCIeWidth = m.MinPCIeWidth.V
			if m.NVLink.Set {
				exp.NVLink = NVLinkExpectation(m.NVLink.V)
			}
			exp.MaxTemperatureC = m.MaxTemperatureC.V
		}
		for _, nt := range v.NCCLTests {
			if !nt.Command.Set {
				continue
			}
			e := NCCLExpectation{Name: nt.Name, Command: nt.Command.V, MinBusBWGBps: nt.MinBusBWGbps.V, MultiNode: isMultiNode(nt.Command.V)}
			if nt.Timeout.Set {
				e.Timeout, _ = time.ParseDuration(nt.Timeout.V)
			}
			exp.NCCL = append(exp.NCCL, e)
		}
	}
	return exp
}

// modelToken is the part of a GPU model that NVML's device name contains:
// the spec says "H100 SXM5 80GB", NVML "NVIDIA H100 80GB HBM3".
func modelToken(model string) string {
	f := strings.Fields(strings.ReplaceAll(model, "-", " "))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// isMultiNode reports whether an nccl-tests command is launched across
// hosts by an MPI or Slurm launcher.
func isMultiNode(cmd string) bool {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return false
	}
	switch f[0] {
	case "mpirun", "mpiexec", "srun":
		return true
	}
	return false
}

// sensitiveChecks names the checks whose expectation comes from a
// sensitive spec value.
func sensitiveChecks(n *spec.Node) map[string]bool {
	out := map[string]bool{}
	if d := n.Driver; d != nil {
		out["nvml.driver_version"] = d.Version.Sensitive
		out["nvml.persistence_mode"] = d.PersistenceMode.Sensitive
		out["host.fabric_manager"] = d.FabricManager.Sensitive
		out["host.peermem"] = d.Peermem.Sensitive
	}
	if n.NUMA != nil {
		for _, b := range n.NUMA.Binds {
			out["nvml.numa_node"] = out["nvml.numa_node"] || b.Node.Sensitive
			for _, g := range b.GPUs {
				out["nvml.numa_node"] = out["nvml.numa_node"] || g.Sensitive
			}
		}
	}
	if n.Affinity != nil {
		for _, nic := range n.Affinity.GPUNIC {
			out["nvml.gpu_nic"] = out["nvml.gpu_nic"] || nic.Sensitive
		}
	}
	if v := n.Verify; v != nil {
		if m := v.NVML; m != nil {
			out["nvml.gpu_count"] = m.GPUs.Sensitive
			out["nvml.ecc_mode"] = m.ECC.Sensitive
			out["nvml.pcie_link"] = m.MinPCIeGen.Sensitive || m.MinPCIeWidth.Sensitive
			out["nvml.nvlink"] = m.NVLink.Sensitive
			out["nvml.temperature"] = m.MaxTemperatureC.Sensitive
		}
		for _, t := range v.NCCLTests {
			out["nccl."+t.Name] = t.Command.Sensitive || t.MinBusBWGbps.Sensitive || t.Timeout.Sensitive
		}
	}
	for k, v := range out {
		if !v {
			delete(out, k)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
