package verify

import (
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/cmdline"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/spec"
)

// NVLinkExpectation says what NVLink state a node must show.
type NVLinkExpectation string

// NVLink expectations.
const (
	// NVLinkUnchecked leaves NVLink unjudged.
	NVLinkUnchecked NVLinkExpectation = ""
	// NVLinkAllActive requires every NVLink of every GPU to be active
	// (NVLink bridge and NVSwitch systems).
	NVLinkAllActive NVLinkExpectation = "all_active"
	// NVLinkNone requires no active NVLink (PCIe-only systems).
	NVLinkNone NVLinkExpectation = "none"
)

// Interconnect is how the GPUs of a node talk to each other; it selects
// rows of the threshold catalogue.
type Interconnect string

// Interconnects known to the threshold catalogue.
const (
	InterconnectNVSwitch     Interconnect = "nvswitch"
	InterconnectNVLinkBridge Interconnect = "nvlink_bridge"
	InterconnectPCIe         Interconnect = "pcie"
)

// NICExpectation pairs a GPU with the NIC it should use.
type NICExpectation struct {
	// NIC is the NIC's name as the agent reports it, e.g. "mlx5_0".
	NIC string
	// Allowed lists acceptable common ancestors; nil means PIX or PXB
	// (GPUDirect RDMA wants the GPU and NIC under one PCIe switch; a path
	// across the CPU, let alone the socket interconnect, costs bandwidth).
	Allowed []nvmlfacts.Level
}

// NCCLExpectation is one configured nccl-tests run.
type NCCLExpectation struct {
	// Name is the label from the spec; the check id is "nccl.<Name>".
	Name string
	// Command is the nccl-tests command line.
	Command string
	// MinBusBWGBps is the floor in GB/s; 0 takes it from the threshold catalogue.
	MinBusBWGBps float64
	// Timeout bounds the run; 0 means the tier's budget decides.
	Timeout time.Duration
	// MultiNode marks a run launched across hosts: the spec's multi_node,
	// else a launcher in front of the test (mpirun, srun, also behind
	// env/timeout/nice, environment assignments or a directory). It runs
	// once per node group at the fleet tier only, and is judged against
	// multi-node floors only.
	MultiNode bool
	// Network is the fabric between the nodes of a multi-node run (the
	// spec's network, else read from the hardware's NICs); "" when unknown.
	Network string
}

// Expectation is what a node must be, as the caller read it from a spec.
// Zero values mean "not checked" unless the field says otherwise.
type Expectation struct {
	// GPUCount is the number of GPUs NVML must enumerate.
	GPUCount int
	// GPUModel must appear in every GPU's name as whole words,
	// case-insensitively (e.g. "H100"; real drivers print "NVIDIA H100
	// 80GB HBM3"): "A10" does not match an A100, nor "L4" an L40S.
	GPUModel string
	// Interconnect selects catalogue floors for NCCL tests.
	Interconnect Interconnect
	// DriverVersion is the pinned driver version, compared exactly.
	DriverVersion string
	// PersistenceMode, when set, is the required persistence mode.
	PersistenceMode *bool
	// ECC, when set, is the required ECC mode. Uncorrectable ECC errors,
	// pending row remaps and remap failures are always checked.
	ECC *bool
	// MinPCIeGen is the lowest acceptable PCIe generation; 0 means each
	// GPU's own maximum.
	MinPCIeGen int
	// MinPCIeWidth is the narrowest acceptable link; 0 means each GPU's
	// maximum width.
	MinPCIeWidth int
	// NVLink is the required NVLink state.
	NVLink NVLinkExpectation
	// NUMANode maps GPU index to the NUMA node it must sit on.
	NUMANode map[int]int
	// NIC maps GPU index to its paired NIC.
	NIC map[int]NICExpectation
	// GPUBusID maps a GPU index of the spec to the PCI address the
	// hardware block gives it ("0000:9d:00.0", lower case): the checks
	// match the spec's GPUs to NVML's by this address, not by NVML's
	// numbering. Empty when the hardware gives no addresses.
	GPUBusID map[int]string
	// SlurmAutodetect is true when slurmd finds the GPUs itself (slurm {
	// gres_autodetect = "nvml" }): slurm.gres compares what `slurmd -G`
	// reports with NUMANode.
	SlurmAutodetect bool
	// MaxTemperatureC is the highest acceptable GPU temperature; 0 skips.
	MaxTemperatureC int
	// ForbiddenThrottle lists throttle reasons that fail a GPU; nil means
	// DefaultForbiddenThrottle().
	ForbiddenThrottle []string
	// MIG, when set, is the required MIG mode.
	MIG *bool
	// FatalXIDs lists XIDs that fail the node when seen in the listening
	// window; nil means DefaultFatalXIDs().
	FatalXIDs []uint64
	// UnknownXidFail fails kernel.xid on an Xid or SXid gpuform cannot
	// judge (not in its catalogue, or no action in NVIDIA's) instead of
	// erroring it: health { unknown_xid = "drain" }. Either way it is
	// never a pass.
	UnknownXidFail bool
	// FabricManager, when set, says whether nvidia-fabricmanager must be running.
	FabricManager *bool
	// Peermem, when set, says whether nvidia-peermem must be loaded.
	Peermem *bool
	// VBIOS, when set, is the VBIOS version every GPU must report
	// (firmware { gpu_vbios }).
	VBIOS string
	// NICFirmware, when set, is the firmware every RDMA adapter must
	// report (firmware { nic_firmware }).
	NICFirmware string
	// BIOS, when set, is the BIOS version the host must report
	// (firmware { bios }).
	BIOS string
	// BMC, when set, is the BMC firmware revision the host must report
	// (firmware { bmc }).
	BMC string
	// Fabric asks for nvml.fabric: the hardware is a rack-scale tray
	// whose GPUs must be registered with the rack's NVLink fabric.
	Fabric bool
	// IMEX, when set, is what imex.peers judges: driver { imex = true }
	// with the node's NVLink domains.
	IMEX *IMEXExpectation
	// DCGM is true when the spec pins DCGM: then a node without dcgmi
	// fails dcgm.diag at the quick tier even when DCGMOptional says it may
	// lack it.
	DCGM bool
	// DCGMOptional lets a node without dcgmi skip dcgm.diag; otherwise the
	// quick tier, which cannot run its diagnostics, fails it.
	DCGMOptional bool
	// DCGMNotInstalled is true when the spec installs no DCGM (no dcgm
	// block): then dcgm.diag is optional by default, and its skip says
	// "dcgm: optional, the spec installs no DCGM". A spec that declares
	// DCGM requires dcgmi unless verify { optional } lists it.
	DCGMNotInstalled bool
	// NCCL lists the nccl-tests runs.
	NCCL []NCCLExpectation
	// NCCLOptional lets a node without an nccl-tests binary skip the run;
	// otherwise the missing binary fails it.
	NCCLOptional bool
	// Processes asks for the bind.process checks (verify -processes): the
	// NVML report must then carry the GPUs' compute processes.
	Processes bool
	// Spec is the node block whose resources (packages, files, services,
	// settings) the spec.* checks compare with the host the way plan
	// does; nil leaves them out.
	Spec *spec.Node

	// Sensitive names the checks (IDs without the "[gpuN]" suffix) whose
	// expectation comes from a sensitive spec value: their expected and
	// observed values and message read spec.Redacted, since an observed
	// value that matches is the secret.
	Sensitive map[string]bool
	// Redactor hides the node's sensitive values in every other message.
	Redactor *spec.Redactor
	// KB is the knowledge base the checks judge by: remedies, the Xid
	// catalogue, NCCL floors, image driver requirements, package names.
	// Check needs it; ExpectationFor leaves it to the caller, which has the
	// run's (the runner sets Options.KB).
	KB *kb.KB
}

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
		for _, g := range hw.GPUs {
			if bus, err := nvmlfacts.NormalizeBusID(g.PCI); err == nil && g.PCI != "" {
				if exp.GPUBusID == nil {
					exp.GPUBusID = map[int]string{}
				}
				exp.GPUBusID[g.Index] = bus
			}
		}
		switch hw.Interconnect {
		case "nvswitch":
			exp.Interconnect = InterconnectNVSwitch
			exp.NVLink = NVLinkAllActive
			// A rack-scale tray (NVLink domain beyond its own GPUs) runs
			// no Fabric Manager: the rack's switch trays train the fabric.
			if hw.NVLinkDomain <= hw.GPUCount {
				exp.FabricManager = &t
			} else {
				exp.Fabric = true
			}
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
			// A pin with its package revision ("550.127.08-0ubuntu1")
			// loads as the upstream release, which is all NVML reports.
			exp.DriverVersion, _, _ = strings.Cut(d.Version.V.Raw, "-")
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
	exp.IMEX = imexExpectation(n)
	if n.Firmware != nil && n.Firmware.GPUVBIOS.Set {
		exp.VBIOS = n.Firmware.GPUVBIOS.V
	}
	if n.Firmware != nil && n.Firmware.NICFirmware.Set {
		exp.NICFirmware = n.Firmware.NICFirmware.V
	}
	if n.Firmware != nil && n.Firmware.BIOS.Set {
		exp.BIOS = n.Firmware.BIOS.V
	}
	if n.Firmware != nil && n.Firmware.BMC.Set {
		exp.BMC = n.Firmware.BMC.V
	}
	exp.DCGM = n.DCGM != nil && n.DCGM.Version.Set
	exp.UnknownXidFail = n.Health.DrainsUnknownXid()
	exp.DCGMOptional = n.Verify.IsOptional(spec.ToolDCGM)
	exp.DCGMNotInstalled = n.DCGM == nil
	exp.NCCLOptional = n.Verify.IsOptional(spec.ToolNCCLTests)
	exp.Spec = n
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
	exp.SlurmAutodetect = n.Slurm != nil && n.Slurm.GRES.V && n.Slurm.GRESAutodetect.Set
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
			if m.MIG.Set {
				on := m.MIG.V == spec.MIGEnabled
				exp.MIG = &on
			}
		}
		for _, nt := range v.NCCLTests {
			if !nt.Command.Set {
				continue
			}
			e := NCCLExpectation{Name: nt.Name, Command: nt.Command.V, MinBusBWGBps: nt.MinBusBWGbps.V, MultiNode: isMultiNode(nt.Command.V), Network: networkOf(n.Hardware)}
			if nt.MultiNode.Set {
				e.MultiNode = nt.MultiNode.V
			}
			if nt.Network.Set {
				e.Network = nt.Network.V
			}
			if nt.Timeout.Set {
				e.Timeout = nt.Timeout.V.D
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
// hosts by an MPI or Slurm launcher, wherever it sits on the command line
// (cmdline.Launcher).
func isMultiNode(cmd string) bool { return cmdline.Launcher(cmd) != "" }

// networkOf names the fabric of a hardware profile's RDMA NICs in the
// terms of multi-node floors: InfiniBand at 400 Gb/s is NDR, at 200 Gb/s
// HDR; RoCE is RoCE. Cloud fabrics (GPUDirect-TCPXO, EFA) are not visible
// in a NIC list: the spec's network names them.
func networkOf(hw *spec.Hardware) string {
	if hw == nil {
		return ""
	}
	kinds := map[string]bool{}
	for _, nic := range hw.NICs {
		if !nic.RDMA {
			continue
		}
		switch {
		case nic.Link == "infiniband" && nic.SpeedGbps >= 400:
			kinds["ib_ndr"] = true
		case nic.Link == "infiniband" && nic.SpeedGbps >= 200:
			kinds["ib_hdr"] = true
		case nic.Link == "roce":
			kinds["roce"] = true
		default:
			kinds["other"] = true
		}
	}
	if len(kinds) != 1 || kinds["other"] {
		// Mixed or unknown fabrics: no floor can be picked by guessing.
		return ""
	}
	for k := range kinds {
		return k
	}
	return ""
}

// sensitiveChecks names the checks whose expectation comes from a
// sensitive spec value.
func sensitiveChecks(n *spec.Node) map[string]bool {
	out := map[string]bool{}
	if d := n.Driver; d != nil {
		out[string(CheckDriverVersion)] = d.Version.Sensitive
		out[string(CheckPersistenceMode)] = d.PersistenceMode.Sensitive
		out[string(CheckFabricManager)] = d.FabricManager.Sensitive
		out[string(CheckPeermem)] = d.Peermem.Sensitive
	}
	if n.NUMA != nil {
		for _, b := range n.NUMA.Binds {
			out[string(CheckNUMANode)] = out[string(CheckNUMANode)] || b.Node.Sensitive
			for _, g := range b.GPUs {
				out[string(CheckNUMANode)] = out[string(CheckNUMANode)] || g.Sensitive
			}
		}
	}
	if n.Affinity != nil {
		for _, nic := range n.Affinity.GPUNIC {
			out[string(CheckGPUNIC)] = out[string(CheckGPUNIC)] || nic.Sensitive
		}
	}
	if v := n.Verify; v != nil {
		if m := v.NVML; m != nil {
			out[string(CheckGPUCount)] = m.GPUs.Sensitive
			out[string(CheckECCMode)] = m.ECC.Sensitive
			out[string(CheckPCIeLink)] = m.MinPCIeGen.Sensitive || m.MinPCIeWidth.Sensitive
			out[string(CheckNVLink)] = m.NVLink.Sensitive
			out[string(CheckTemperature)] = m.MaxTemperatureC.Sensitive
		}
		for _, t := range v.NCCLTests {
			out[CheckNCCL.Named(t.Name)] = t.Command.Sensitive || t.MinBusBWGbps.Sensitive || t.Timeout.Sensitive
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
