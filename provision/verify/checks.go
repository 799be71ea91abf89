package verify

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// CheckID is the stable base of a check id: the whole id of a node-wide
// check, the part before "[gpuN]" of a per-GPU one, the part before
// ".<name>" of a named one. Pipelines match on ids, so they never change.
type CheckID string

// The checks, one constant each; Checks declares what each needs and how
// it judges.
const (
	CheckReachable        CheckID = "host.reachable"
	CheckNVMLFacts        CheckID = "nvml.facts"
	CheckGPUCount         CheckID = "nvml.gpu_count"
	CheckGPUModel         CheckID = "nvml.gpu_model"
	CheckDriverVersion    CheckID = "nvml.driver_version"
	CheckXID              CheckID = "nvml.xid"
	CheckKernelXID        CheckID = "kernel.xid"
	CheckPersistenceMode  CheckID = "nvml.persistence_mode"
	CheckECCMode          CheckID = "nvml.ecc_mode"
	CheckECCUncorrectable CheckID = "nvml.ecc_uncorrectable"
	CheckRowRemap         CheckID = "nvml.row_remap"
	CheckPCIeLink         CheckID = "nvml.pcie_link"
	CheckNVLink           CheckID = "nvml.nvlink"
	CheckTemperature      CheckID = "nvml.temperature"
	CheckThrottle         CheckID = "nvml.throttle"
	CheckMIGMode          CheckID = "nvml.mig_mode"
	CheckNVLinkPairs      CheckID = "nvml.nvlink_pairs"
	CheckNUMANode         CheckID = "nvml.numa_node"
	CheckGPUNIC           CheckID = "nvml.gpu_nic"
	CheckProcessBinding   CheckID = "bind.process"
	CheckSlurmGRES        CheckID = "slurm.gres"
	CheckFabricManager    CheckID = "host.fabric_manager"
	CheckPeermem          CheckID = "host.peermem"
	CheckIMEXPeers        CheckID = "imex.peers"
	CheckFabric           CheckID = "nvml.fabric"
	CheckFabricDomain     CheckID = "nvml.fabric_domain"
	CheckVBIOS            CheckID = "nvml.vbios"
	CheckNICFirmware      CheckID = "nic.firmware"
	CheckBIOS             CheckID = "host.bios"
	CheckBMC              CheckID = "host.bmc"
	CheckFirmwareDomain   CheckID = "firmware.domain_drift"
	CheckBindingFile      CheckID = "bind.file"
	CheckBindingNCCLConf  CheckID = "bind.nccl_conf"
	CheckNICIRQ           CheckID = "nic.irq_affinity"
	CheckNICMTU           CheckID = "nic.mtu"
	CheckNICLink          CheckID = "nic.link"
	CheckNICPCIeLink      CheckID = "nic.pcie_link"
	CheckImageDriver      CheckID = "container.image_driver"
	CheckImageDigest      CheckID = "container.image_digest"
	CheckSpecCompare      CheckID = "spec.compare"
	CheckRebootPending    CheckID = "spec.reboot_pending"
	CheckSpecResource     CheckID = "spec"
	CheckDCGMDiag         CheckID = "dcgm.diag"
	CheckDCGMTest         CheckID = "dcgm"
	CheckNCCL             CheckID = "nccl"
	CheckIsolation        CheckID = "nccl_isolation"
	CheckPeerOutlier      CheckID = "nvml.peer_outlier"
	CheckBurninRecord     CheckID = "burnin.record"
	CheckBurnin           CheckID = "burnin"
)

// GPU is the id of a per-GPU check on GPU n (NVML index), e.g.
// "nvml.pcie_link[gpu3]".
func (id CheckID) GPU(n int) string { return fmt.Sprintf("%s[gpu%d]", id, n) }

// NIC is the id of a per-NIC check on RDMA device dev, e.g.
// "nic.link[mlx5_3]".
func (id CheckID) NIC(dev string) string { return fmt.Sprintf("%s[%s]", id, dev) }

// Named is the id of a named check, e.g. "nccl.allreduce" for the
// nccl-tests run labelled allreduce.
func (id CheckID) Named(name string) string { return string(id) + "." + name }

// Scope says how a check's emitted ids are formed from its CheckID.
type Scope int

// Scopes.
const (
	// ScopeNode checks emit their CheckID as is, once per host.
	ScopeNode Scope = iota
	// ScopeGPU checks emit one id per GPU: CheckID.GPU.
	ScopeGPU
	// ScopeNamed checks emit one id per DCGM test or nccl-tests run:
	// CheckID.Named.
	ScopeNamed
	// ScopeNIC checks emit one id per RDMA device: CheckID.NIC.
	ScopeNIC
)

// Need is what a check reads to judge.
type Need string

// What checks read.
const (
	// NeedConnection is the transport itself.
	NeedConnection Need = "connection"
	// NeedNVML is the NVML report (agent, else nvidia-smi).
	NeedNVML Need = "NVML facts"
	// NeedProbe is the facts probe's view of the host (units, modules,
	// packages, managed files, settings).
	NeedProbe Need = "probe facts"
	// NeedSlurmd is a `slurmd -G` run on the host.
	NeedSlurmd Need = "slurmd -G"
	// NeedDCGM is a `dcgmi diag` run (quick tier and deeper).
	NeedDCGM Need = "dcgm"
	// NeedNCCL is an nccl-tests run (full tier, fleet for multi-node).
	NeedNCCL Need = "nccl-tests"
	// NeedKernelLog is the kernel log (dmesg): the driver's Xid and SXid
	// lines since boot.
	NeedKernelLog Need = "kernel log"
	// NeedBurnin is the burn-in's DCGM run, sustained load and counter
	// reads (burnin tier).
	NeedBurnin Need = "burn-in"
)

// CheckDef declares one check: its id, what it reads, when it is emitted,
// how it judges and what to do when it fails. CHECKS.md is this table.
type CheckDef struct {
	// ID is the check's stable id (base).
	ID CheckID
	// Scope says how emitted ids are formed from ID.
	Scope Scope
	// Needs is what the check reads.
	Needs Need
	// Fact, when set, is the NVML fact beyond the basic report the check
	// needs (nvmlfacts.Fact*): on a path that did not collect it (the
	// nvidia-smi fallback) the check is an error that says so: it was not
	// made, and a gate must not pass it.
	Fact string
	// When says when the check is emitted.
	When string
	// Judges says when it fails (and errs or skips where that is special).
	Judges string
	// Action is what an operator does about a failure.
	Action string
}

// Checks is the table of every check verify emits, in report order.
func Checks() []CheckDef {
	return []CheckDef{
		{ID: CheckReachable, Needs: NeedConnection,
			When:   "the host could not be reached",
			Judges: "always (report.UnreachableHost)",
			Action: "check the address, SSH access and that the host is up"},
		{ID: CheckNVMLFacts, Needs: NeedNVML,
			When:   "always",
			Judges: "neither the NVML agent nor `nvidia-smi -q -x` produced facts; `observed` names the path used",
			Action: "check that the driver is loaded (`nvidia-smi`) and the message's reason"},
		{ID: CheckGPUCount, Needs: NeedNVML,
			When:   "`GPUCount` set",
			Judges: "NVML enumerates another number of GPUs; the message names, by index and PCI address, each GPU the hardware block declares that NVML does not enumerate",
			Action: "a GPU fell off the bus or its driver failed: see dmesg for XID 79"},
		{ID: CheckGPUModel, Needs: NeedNVML,
			When:   "`GPUModel` set",
			Judges: "a GPU's name does not contain the model as whole words (`A10` does not match an A100)",
			Action: "fix the spec's model or the host's placement in the spec"},
		{ID: CheckDriverVersion, Needs: NeedNVML,
			When:   "`DriverVersion` set",
			Judges: "the loaded driver differs from the pinned one",
			Action: "apply the spec, or reboot if the new driver is installed but not loaded"},
		{ID: CheckXID, Needs: NeedNVML, Fact: nvmlfacts.FactXID,
			When:   "the agent listened for XIDs",
			Judges: "an XID of `FatalXIDs` (default: Azure's health-check list) was raised; one the catalogue does not hold or gives no action for is an error (a failure with `health { unknown_xid = \"drain\" }`), never a pass",
			Action: "the `remedy` says what NVIDIA's Xid catalogue asks for the worst Xid seen (reset the GPU, reboot, drain for RMA)"},
		{ID: CheckKernelXID, Needs: NeedKernelLog,
			When:   "always (error when dmesg cannot be read or its output passes 64 MiB: nothing judged is nothing passed)",
			Judges: "an Xid or NVSwitch SXid in the kernel log since boot is in `FatalXIDs` or its catalogue action takes the node out (reset_gpu, reboot, inspect, rma); Xids 144-150 by the subcode and error status on their line (NVIDIA's decode sheet); monitor-class ones pass, listed in `observed`; one the catalogue does not hold or gives no action for is an error (a failure with `health { unknown_xid = \"drain\" }`), never a pass",
			Action: "the `remedy` says what the catalogue asks for the worst one; health mode drains on it, or on repeats of monitor-class Xids"},
		{ID: CheckPersistenceMode, Scope: ScopeGPU, Needs: NeedNVML,
			When:   "`PersistenceMode` set",
			Judges: "mode differs",
			Action: "apply the spec (nvidia-persistenced)"},
		{ID: CheckECCMode, Scope: ScopeGPU, Needs: NeedNVML,
			When:   "`ECC` set",
			Judges: "mode differs (message says when a change is pending)",
			Action: "set the mode; a pending change needs a GPU reset or reboot"},
		{ID: CheckECCUncorrectable, Scope: ScopeGPU, Needs: NeedNVML,
			When:   "always",
			Judges: "volatile or aggregate uncorrectable count > 0 (skip without counters)",
			Action: "drain the node and have the GPU checked"},
		{ID: CheckRowRemap, Scope: ScopeGPU, Needs: NeedNVML,
			When:   "always",
			Judges: "row remap pending or failed; page retirement pending on pre-Ampere GPUs",
			Action: "pending: reset the GPU or reboot before use; failed: the GPU needs service (RMA)"},
		{ID: CheckPCIeLink, Scope: ScopeGPU, Needs: NeedNVML,
			When:   "always",
			Judges: "generation below `MinPCIeGen` (default the GPU's max; idle GPUs judged on the link's max, which the observed value says; a host-capped link names `min_pcie_gen`) or width below `MinPCIeWidth` (default the link's max)",
			Action: "reseat the GPU or check the riser/slot; a host-capped link: check the BIOS slot setting; a GPU passed through to a VM: set `min_pcie_gen`/`min_pcie_width` to what the instance provides"},
		{ID: CheckNVLink, Scope: ScopeGPU, Needs: NeedNVML, Fact: nvmlfacts.FactNVLink,
			When:   "`NVLink` set",
			Judges: "`all_active`: a link down or no NVLink; `none`: a link active",
			Action: "check the NVLink bridge or NVSwitch tray and fabric manager"},
		{ID: CheckNVLinkPairs, Scope: ScopeGPU, Needs: NeedNVML, Fact: nvmlfacts.FactTopology,
			When:   "`NVLink` set, on the nvidia-smi fallback path only (where `nvml.nvlink` is blind): `nvidia-smi topo -m`'s NV# link count per GPU pair",
			Judges: "`all_active` on an NVSwitch board (`hardware { interconnect = \"nvswitch\" }`): a pair below the node's full count (NV12 on A100, NV18 on H100), blamed on the GPU whose every pair is short, else on both ends of the one short pair; on NVLink-bridge boards: the GPU's best pair below the node's full count; without a hardware block: no NV# to any GPU; `none`: any NV#. `observed` lists the pairs by count (`NV12 to gpu1, gpu2`)",
			Action: "check the NVLink bridge or NVSwitch tray and fabric manager; `nvidia-smi nvlink -s` shows the links of the GPU named"},
		{ID: CheckTemperature, Scope: ScopeGPU, Needs: NeedNVML,
			When:   "`MaxTemperatureC` > 0",
			Judges: "hotter than the limit",
			Action: "check airflow and fans"},
		{ID: CheckThrottle, Scope: ScopeGPU, Needs: NeedNVML,
			When:   "always",
			Judges: "a reason in `ForbiddenThrottle` (default hw/sw thermal, hw slowdown, power brake) is active",
			Action: "check cooling and power delivery"},
		{ID: CheckMIGMode, Scope: ScopeGPU, Needs: NeedNVML,
			When:   "`verify { nvml { mig = \"enabled\" | \"disabled\" } }`; NVML or, on the fallback path, `nvidia-smi -q -x`'s `mig_mode`",
			Judges: "mode differs (a GPU without MIG satisfies \"disabled\" and fails \"enabled\"); `observed` is the current mode, and a pending enable is named",
			Action: "set the mode; enabling is pending until the GPU is reset"},
		{ID: CheckNUMANode, Scope: ScopeGPU, Needs: NeedNVML, Fact: nvmlfacts.FactNUMA,
			When:   "per `NUMANode` entry",
			Judges: "the GPU's NUMA node differs from its `bind` (skip when NVML's memory affinity spans several nodes, and `not run` for a declared GPU NVML does not enumerate, naming its PCI address)",
			Action: "fix the spec's `numa` binds to the host's topology"},
		{ID: CheckGPUNIC, Scope: ScopeGPU, Needs: NeedNVML, Fact: nvmlfacts.FactTopology,
			When:   "per `NIC` entry",
			Judges: "the GPU–NIC common ancestor is not allowed (default PIX/PXB; SYS fails); skip, `not run`, for a declared GPU NVML does not enumerate, naming its PCI address",
			Action: "pair the GPU with a NIC under its PCIe switch"},
		{ID: CheckProcessBinding, Scope: ScopeGPU, Needs: NeedNVML,
			When:   "`verify -processes`, per GPU by the spec's index, matched to NVML's GPU by PCI bus id (skip when no compute process runs on it, or, naming its bus id, when NVML does not enumerate the GPU: `nvml.gpu_count` fails for it; `error` on the nvidia-smi fallback, which lists none)",
			Judges: "a compute process NVML reports on the GPU may run on CPUs outside the GPU's NUMA node (the spec's `bind`, else NVML's CPU affinity; /proc/PID/status Cpus_allowed_list), or, for a GPU paired with an RDMA NIC, its NCCL_IB_HCA is missing or selects other NICs than the paired one, or its UCX_NET_DEVICES names another device (/proc/PID/environ); `error` when a process's /proc cannot be read (exited, another PID namespace, permission denied); on a simulated node `observed` says the processes are modelled",
			Action: "start the job's ranks with `gpuform bind -- COMMAND` (under torchrun --no-python, srun or mpirun); run verify as root to read other users' processes"},
		{ID: CheckSlurmGRES, Scope: ScopeGPU, Needs: NeedSlurmd,
			When:   "per `NUMANode` entry, when `SlurmAutodetect` is set (`slurm { gres_autodetect = \"nvml\" }`); skip, naming its bus id, for a GPU NVML does not enumerate (`nvml.gpu_count` fails for it)",
			Judges: "`slurmd -G` reports no GPU with File=/dev/nvidiaN, N the device minor NVML gives the GPU at the spec's PCI bus id (so GPUs NVML renumbers after one fell off the bus keep their files; the spec's index where NVML gives no minor), or ties it to other Slurm cores than those of its bound NUMA node on this host (not compared when the host's CPUs are all on one NUMA node); `error` when slurmd -G cannot run",
			Action: "fix the spec's `numa` binds, or the NVML-reported topology (BIOS NUMA settings); `slurmd -G` on the node shows what slurmd detects"},
		{ID: CheckFabricManager, Needs: NeedProbe,
			When:   "`FabricManager` set",
			Judges: "nvidia-fabricmanager state differs (unknown = error)",
			Action: "start nvidia-fabricmanager (NVSwitch systems cannot run CUDA work without it)"},
		{ID: CheckFabric, Needs: NeedNVML,
			When:   "the hardware's `nvlink_domain` is larger than its `gpu_count` (a rack-scale tray)",
			Judges: "a GPU whose NVLink fabric registration is not state `Completed` with status `Success`, has clique id 0 or a zero cluster UUID, or whose clique and cluster differ from the host's other GPUs (each GPU named); `error` on the nvidia-smi fallback, which reads no fabric state",
			Action: "check the rack's NVLink switch trays and the tray's cabling; a tray in another clique than its rack is not in the rack's NVLink partition"},
		{ID: CheckFabricDomain, Needs: NeedNVML,
			When:   "a rack-scale tray in an `nvlink_domain`, judged by the runner after every host of the run was verified",
			Judges: "the host's fabric clique and cluster differ from the ones most of its domain's verified hosts report (the others named with their counts); `error` when the host reports none",
			Action: "a tray in another clique is not in its rack's NVLink partition: check the partition (NVLink switch trays) and the tray's NVLink cabling"},
		{ID: CheckVBIOS, Needs: NeedNVML,
			When:   "the node pins `firmware { gpu_vbios }`",
			Judges: "a GPU whose VBIOS version (NVML, nvidia-smi's \"VBIOS Version\") is not the pinned one (GPUs named with their version); `error` when a GPU reports none",
			Action: "flash the pinned VBIOS with the vendor's firmware tool, or pin what the fleet runs"},
		{ID: CheckNICFirmware, Needs: NeedProbe,
			When:   "the node pins `firmware { nic_firmware }`",
			Judges: "an RDMA adapter whose firmware (/sys/class/infiniband/DEV/fw_ver) is not the pinned one (adapters named with their version); `error` when the host has no RDMA adapter or one reports none, or without the probe's facts",
			Action: "burn the pinned firmware with the vendor's tool (mlxfwmanager, flint), then reset the adapter or reboot; or pin what the fleet runs"},
		{ID: CheckBIOS, Needs: NeedProbe,
			When:   "the node pins `firmware { bios }`",
			Judges: "the BIOS version DMI reports (/sys/class/dmi/id/bios_version) is not the pinned one; `error` when the host reports none, or without the probe's facts",
			Action: "update the BIOS through the BMC or the vendor's tool, or pin what the fleet runs"},
		{ID: CheckBMC, Needs: NeedProbe,
			When:   "the node pins `firmware { bmc }`",
			Judges: "the BMC's Firmware Revision `ipmitool mc info` prints is not the pinned one; `error` (never a pass) when it was not read: no ipmitool or no /dev/ipmi0 on the node, the read failed or timed out, or no probe facts",
			Action: "update the BMC's firmware with the vendor's tool, or pin what the fleet runs; install ipmitool and load the ipmi_devintf and ipmi_si modules for /dev/ipmi0"},
		{ID: CheckFirmwareDomain, Needs: NeedNVML,
			When:   "a host in an `nvlink_domain`, judged by the runner after every host of the run was verified",
			Judges: "the host's GPU VBIOS, ConnectX firmware or BIOS version differs from the one most hosts of its domain run (the others named with their counts; one result for each kind of firmware), or its GPUs (NICs) run different versions; `error` when it reports none while others of the domain do, `skip` for a kind no host of the domain reports",
			Action: "update the odd trays so the whole domain runs one firmware set"},
		{ID: CheckIMEXPeers, Needs: NeedProbe,
			When:   "the driver block sets `imex = true`",
			Judges: "nvidia-imex.service not enabled and active, or /etc/nvidia-imex/nodes_config.cfg missing a host of the host's `nvlink_domain` (named) or listing one outside it; `skip` for a host in no domain, `error` without the probe's facts. Confirm before fail: a failure on the service's state alone (the node list complete) passes, both shown, when a multi-node NVLink all_reduce (`network = \"mnnvl\"`) passed on the host",
			Action: "`gpuform apply` writes the domain's peers and starts IMEX; a tray missing from every other tray's list was added to the domain without an apply of the rack"},
		{ID: CheckPeermem, Needs: NeedProbe,
			When:   "`Peermem` set",
			Judges: "nvidia-peermem state differs (unknown = error)",
			Action: "load nvidia-peermem for GPUDirect RDMA"},
		{ID: CheckBindingFile, Needs: NeedProbe,
			When:   "the node has `numa { bind }` blocks or an `affinity { gpu_nic }` pairing",
			Judges: "/etc/gpuform/binding.json is absent, unreadable (another format version), or differs from the spec's binding with the CPUs the host's NUMA nodes have now (per GPU: NUMA node, CPUs, NIC), or names an RDMA NIC the host does not have; the spec's binds do not fit the host (a NUMA node it lacks)",
			Action: "`gpuform apply` rewrites the file; a NUMA node whose CPUs changed (SMT, offline CPUs) needs apply too"},
		{ID: CheckBindingNCCLConf, Needs: NeedProbe,
			When:   "the binding pairs GPUs with RDMA NICs and /etc/nccl.conf sets NCCL_IB_HCA",
			Judges: "the file's NCCL_IB_HCA (prefix, `=` exact and `^` exclude forms as NCCL reads them) leaves out a paired NIC",
			Action: "apply the spec (affinity { nccl_env = true } writes the list), or fix the list by hand"},
		{ID: CheckNICIRQ, Needs: NeedProbe,
			When:   "`affinity { nic_irq_affinity = true }`",
			Judges: "an IRQ of an RDMA NIC's PCI function (its msi_irqs) may run on a CPU outside the NIC's NUMA node (/proc/irq/N/smp_affinity_list), or is unreadable; a NIC without interrupts, or whose NUMA node the platform does not report",
			Action: "`gpuform apply` pins them again and keeps irqbalance off them; find what moved them (irqbalance without gpuform's policy script, a disabled gpuform-nic-irq.service)"},
		{ID: CheckNICMTU, Needs: NeedProbe,
			When:   "`affinity { mtu = { … } }`",
			Judges: "a named RDMA device is absent, has no network interface, or an interface's MTU (/sys/class/net/IF/mtu) differs from the spec's value (every node of the block is held to the same value, so this also catches a mismatch across them)",
			Action: "set the MTU where the interface is configured (netplan, NetworkManager, ifcfg) so it persists; `ip link set dev IF mtu N` changes it until reboot"},
		{ID: CheckNICLink, Scope: ScopeNIC, Needs: NeedProbe,
			When:   "per compute rail: each RDMA device `affinity { gpu_nic }` pairs with a GPU, `affinity { mtu }` names, or `affinity { nccl_ib_hca }` selects on the host (prefix, `=` exact and `^` exclude forms as NCCL reads them); the ports judged are those `nccl_ib_hca` names for the device (`mlx5_0:2`), else port 1. Ports and devices the spec names nowhere (storage, management) are listed in the JSON report's `nics` and Prometheus, not judged",
			Judges: "the device is absent from /sys/class/infiniband, or a judged port is absent, its state (ports/N/state) is not ACTIVE, its physical state (phys_state) is not LinkUp, its link layer differs from the hardware block's `nics` entry (`link`: infiniband, or ethernet/roce = Ethernet), or, with the link up, its rate is below that entry's `speed_gbps` (a faster port passes); a device the hardware block does not list is judged on state and physical state only, which `expected` says",
			Action: "the message names the device, port and PCI bus id and says what the state means: Polling (no link partner) or a low rate: reseat or replace the cable or transceiver and check the switch port (`ibstat DEV`, `mlxlink -d DEV -m`); Disabled: check the switch port and the host's port setting; INIT/ARMED with the link up: check the subnet manager"},
		{ID: CheckNICPCIeLink, Scope: ScopeNIC, Needs: NeedProbe,
			When:   "per compute rail (as `nic.link`) whose PCI function sysfs gives a link for",
			Judges: "the NIC's PCIe link (current_link_width, current_link_speed) is narrower or slower than the most it can train to: the device's max_link_width/max_link_speed, lowered to the upstream port's where the probe read that (a Gen5 NIC in a Gen4 slot passes at Gen4, and `expected` says so); a speed or width sysfs does not know (a virtual function's `Unknown`) is not judged, and `skip` when neither is known or sysfs gives no link",
			Action: "reseat the NIC or check its slot or riser; a link capped by the slot's BIOS setting: check the BIOS PCIe settings"},
		{ID: CheckImageDriver, Scope: ScopeNamed, Needs: NeedNVML,
			When:   "per NGC image in `container { images }` that the knowledge base knows (a reference from a sensitive value is named `image-N`, its place in the list)",
			Judges: "the knowledge base's image × driver × GPU decision (the one lint's `container_image_driver` makes for the pinned driver) says the loaded driver cannot run the image on this GPU; where it only may not (a forward-compatibility exception of unknown status) the check passes with the reason",
			Action: "upgrade the driver (the spec's pin, then apply) or use an older image"},
		{ID: CheckImageDigest, Scope: ScopeNamed, Needs: NeedProbe,
			When:   "per image in `container { images }` pinned to a digest (by the lock file, or by the reference itself); `skip` for a tag the lock file does not record; a reference from a sensitive value is named `image-N`, its place in the list",
			Judges: "the node's runtime (docker, or containerd's k8s.io namespace) does not hold the pinned digest under the image's tag: absent, or the tag points to another digest (the tag now points elsewhere: a pull by tag after the lock); for enroot and Apptainer also a file under the digest's name that this node did not pull or that changed since (observed `unverified`); `error` when the runtime's images cannot be listed; `not run` (needed: never passed) under `-host-root` where the pod cannot ask the node's runtime (no `docker` or `ctr` client on the pod's PATH, or the node's `/run` not visible under the root), and so is `spec.container_images`. An enroot or Apptainer file is judged by its name and its identity in `/etc/gpuform/image-files` below `-tier full` (observed says the content was not hashed at this tier); at `-tier full` its content's sha256, computed with `sha256sum` on the node (5 minutes per file at most), must be the one the ledger recorded at the pull: another fails naming the file (observed `content sha256:…`), a hash not computed in time or a ledger entry without a hash (an older gpuform's) is `error`",
			Action: "`gpuform apply` pulls the pinned digest and points the tag at it; if the new build is wanted, `gpuform lock -upgrade` first; a file whose content changed: remove it, then apply pulls it again"},
		{ID: CheckSpecCompare, Needs: NeedProbe,
			When:   "always (the node block's resources compared with the host, as `plan` does)",
			Judges: "`error` when the comparison cannot be made (no probe facts, a setting gpuform cannot read, such as a daemon.json that is not JSON); `observed` counts the resources compared",
			Action: "read the message; `gpuform plan` reports the same error"},
		{ID: CheckRebootPending, Needs: NeedProbe,
			When:   "the spec manages at least one resource",
			Judges: "configuration is in place but runs only after the next boot: a driver installed while another is loaded (`observed` names both), a kernel argument not yet on the running command line, a service that starts at boot",
			Action: "reboot the host, or apply with `rollout { reboot = \"allow\" }`"},
		{ID: CheckSpecResource, Scope: ScopeNamed, Needs: NeedProbe,
			When:   "per resource `plan` lists for the host: " + strings.Join(resource.Names(), ", ") + " (NUMA balancing is a sysctl)",
			Judges: "`plan` would change it: `observed` and `expected` name each attribute that differs (`(none)` when absent); a resource missing reads `absent`, one gpuform manages that the spec no longer declares expects `absent`",
			Action: "`gpuform plan` shows the change and `gpuform apply` converges it; find out who changed the host"},
		{ID: CheckDCGMDiag, Needs: NeedDCGM,
			When:   "quick tier and deeper",
			Judges: "dcgmi missing (fail; skip when `verify { optional = [\"dcgm\"] }` or the spec has no `dcgm` block, which the message says, unless the spec pins DCGM), hung or DCGM runtime error (error)",
			Action: "install DCGM, or mark it optional where a node may lack it; read the DCGM error"},
		{ID: CheckDCGMTest, Scope: ScopeNamed, Needs: NeedDCGM,
			When:   "per DCGM test, named by the test in lower case with `_` for spaces and punctuation (`dcgm.pcie`, `dcgm.page_retirement_row_remap`); read from `dcgmi diag -j` (DCGM 3 and 4) or the text table (DCGM 1.x to 4.x: `Pass - All`, `Fail - GPU: 0`, `GPU0: Pass`, section rows)",
			Judges: "DCGM reports Fail (the message names the section, the failed GPUs and DCGM's Warning/Error text); Warn passes with its message; a test DCGM skipped or did not run is `skip` with DCGM's reason; a status gpuform does not know is `error`; Info rows are never checks",
			Action: "drain the node; the message names the failed GPUs"},
		{ID: CheckNCCL, Scope: ScopeNamed, Needs: NeedNCCL,
			When:   "per configured nccl-tests run",
			Judges: "NCCL/CUDA failure, missing binary (skip when `verify { optional = [\"nccl_tests\"] }`), timeout, non-zero exit, no footer, `#wrong` ≠ 0, out-of-bounds values, a nan/inf time or bandwidth, or the largest size's busbw (min of out-of-place/in-place) below the floor; a catalogue floor read at a larger message size than the run's largest (a 16G floor, an `-e 8G` run) is judged on that largest size when it clears the floor, else `error` asking to extend the sweep (`-e <floor size>`; the other rules still fail the run); a `-c 0` run says in `observed` that `#wrong` was not counted; `not run` when left to a deeper tier (single-node from `full`, multi-node from `fleet`); `not run` with `needed` (fails the host) at a tier that runs it when no run was made for this host, and on a host of a node group that the group's multi-node run did not include (its rank lines do not name it), never a pass",
			Action: "read the reasons; a low busbw points at links (nvml.pcie_link, nvml.nvlink) or the NIC pairing"},
		{ID: CheckIsolation, Scope: ScopeNamed, Needs: NeedNCCL,
			When:   "per multi-node nccl-tests run, on each host of a node group whose run was isolated pairwise (`-tier fleet`; `verify { isolation }`)",
			Judges: "the host failed with every pair partner while a partner passed with another node (fail: it is the bad node); slow with every partner while passing the floor is a straggler (pass with the finding, fail with `outliers = \"fail\"`); `error` when the group's run failed and the pairs could not decide the host (budget spent, no pair passed); `skip` likewise when the group's run passed",
			Action: "drain the named node and check its fabric links (`ibstat`: a port below its rate, cables, transceivers); hosts that passed with a partner are not the cause"},
		{ID: CheckBurnin, Scope: ScopeNamed, Needs: NeedBurnin,
			When:   "at `-tier burnin`, after the fleet tier's checks: `burnin.dcgm` (`dcgmi diag -r 3`, `-r 4` from a 2h duration; none where DCGM is optional or not installed and not pinned), `burnin.load` (only when the load did not run), `burnin.thermal[BUS]` and `burnin.clocks[BUS]` per GPU, `burnin.fleet_clocks` (with two hosts or more burnt in together: one per host, or one per slow GPU `[BUS]`), `burnin.nccl[RUN]` per single-node `nccl_test`, run 5 times after the load, and per multi-node `nccl_test` of the host's group, run 5 times with its peers from the group's first host (the fleet tier's run the first), `burnin.counters`, `burnin.write` (the record)",
			Judges: "a DCGM test that fails or warns (fail) or only deployment tests passing (not run); no load generator (`dcgmproftester13`/`12`/`11`) or nvidia-smi, or one that failed (fail); a GPU with `hw_slowdown`, `sw_thermal_slowdown`, `hw_thermal_slowdown` or `hw_power_brake_slowdown` in any sample, or hotter than `nvml { max_temperature_c }` (fail); a GPU whose median SM clock under load is more than 10 % below its node's peers' median, with at least 3 GPUs, or below the median of its model's GPUs on every host burnt in together (fail); an NCCL run with `#wrong` > 0, or busbw varying more than 5 % (standard deviation over mean) across its iterations (fail); a PCIe AER total of an NVIDIA function, a GPU's volatile uncorrectable ECC count or an NVLink link's replay, recovery or CRC counter that rose, reset or became unreadable between before the burn-in and after its load and NCCL runs (fail), none readable (not run); a record that could not be written (error). A part that did not run is `not run` and needed: the host is not burnt in",
			Action: "read the failed part: cool or reseat a throttling GPU, replace a GPU that errs, check the links of a rising AER counter or an unsteady NCCL run; run `gpuform verify -tier burnin` again after the repair"},
		{ID: CheckBurninRecord, Needs: NeedNVML,
			When:   "with `verify -require-burnin`: the node's burn-in record, `/var/lib/gpuform/burnin.json` (read to 64 KiB)",
			Judges: "fails a node whose record is missing, corrupt (not one JSON record of a known format, over 64 KiB, finished before it started), failed, expired (finished more than `verify { burnin { max_age } }` ago, default 720h), dated more than 5 minutes in the future (a clock off: the record cannot be dated), or taken on another driver version or other GPUs (a bus id, UUID or serial the NVML report does not have, or a GPU it did not burn in); `observed` is the reason (`valid`, `missing`, `expired`, …); `error` when the record cannot be read or NVML facts are missing",
			Action: "run `gpuform verify -tier burnin` on the node (after a repair, a GPU swap or a driver upgrade), then put it back in service"},
		{ID: CheckPeerOutlier, Scope: ScopeGPU, Needs: NeedNVML,
			When:   "per GPU worse than its peers, with `verify { outliers = \"fail\" }` (the default `warn` lists it in the report's warnings instead)",
			Judges: "PCIe width or maximum generation, power limit or temperature more than `outlier_margin_percent` (default 10 %) worse than the median of the same GPU model in its node or across the hosts verified, with at least 3 peers; with `fail`, a host's single-node nccl-tests busbw that far below the median of the hosts with the same GPUs fails its `nccl.<name>` (with `warn` it is a warning)",
			Action: "compare the GPU with its peers (`nvidia-smi -q -i BUS_ID`): reseat a narrow link, reset a lowered power limit, check the airflow of a hot GPU"},
	}
}

// LookupCheck finds the declaration of an emitted id.
func LookupCheck(id string) (CheckDef, bool) {
	base, gpu, perGPU := strings.Cut(id, "[")
	for _, d := range Checks() {
		switch d.Scope {
		case ScopeNode:
			if !perGPU && id == string(d.ID) {
				return d, true
			}
		case ScopeGPU:
			n, ok := strings.CutPrefix(strings.TrimSuffix(gpu, "]"), "gpu")
			if _, err := strconv.Atoi(n); perGPU && ok && err == nil && base == string(d.ID) {
				return d, true
			}
		case ScopeNIC:
			if dev := strings.TrimSuffix(gpu, "]"); perGPU && base == string(d.ID) && dev != "" && strings.HasSuffix(gpu, "]") {
				return d, true
			}
		case ScopeNamed:
			// Node-wide ids are declared before the named families that
			// share their prefix (dcgm.diag before dcgm.<test>).
			if name, ok := strings.CutPrefix(id, string(d.ID)+"."); ok && name != "" {
				return d, true
			}
		}
	}
	return CheckDef{}, false
}
