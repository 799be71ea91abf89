package spec

import (
	"github.com/hashicorp/hcl/v2"
)

// Node is a node block: the desired state of a group of identical hosts.
type Node struct {
	// Name is the node's label.
	Name string
	// Owner is the spec and the run that manage what this node block
	// declares on its hosts (see Owner).
	Owner Owner
	// Hosts are the expanded target hosts.
	Hosts []Host
	// HostsRange is the range of the hosts expression.
	HostsRange hcl.Range
	// Hardware is the declared topology, nil when not given.
	Hardware *Hardware
	// TensorParallel is the largest tensor-parallel group workloads use.
	TensorParallel Attr[int]

	// Driver is the driver block; nil when not written (likewise below).
	Driver *Driver
	// CUDA is the cuda block (the CUDA toolkit).
	CUDA *VersionedBlock
	// NCCL is the nccl block.
	NCCL *VersionedBlock
	// DCGM is the dcgm block.
	DCGM *VersionedBlock
	// Container is the container block.
	Container *Container
	// Shm is the shm block (the host's /dev/shm).
	Shm *Shm
	// NUMA is the numa block.
	NUMA *NUMA
	// Affinity is the affinity block.
	Affinity *Affinity
	// Hugepages is the hugepages block.
	Hugepages *Hugepages
	// Verify is the verify block.
	Verify *Verify
	// Rollout is the rollout block.
	Rollout *Rollout
	// Slurm is the slurm block (what the node tells slurmd), nil when
	// not written.
	Slurm *NodeSlurm
	// Health is the health block (health mode's drain policy).
	Health *Health
	// Workloads describe the jobs that will run on the hosts.
	Workloads []*Workload
	// NVLinkDomains are the nvlink_domain blocks: which of the hosts
	// share one NVLink domain (an NVL72 rack's trays).
	NVLinkDomains []*NVLinkDomain
	// Firmware is the firmware block (versions verify requires); nil when
	// not written.
	Firmware *Firmware
	// Bench is what `gpuform bench` runs beside its bandwidth layers; nil
	// when not written.
	Bench *Bench

	// Sysctl maps a sysctl key to its desired value, as text.
	Sysctl map[string]Attr[string]
	// SysctlRange is the range of the sysctl attribute.
	SysctlRange hcl.Range
	// KernelArgs are arguments the kernel command line must contain.
	KernelArgs []Attr[string]
	// KernelArgsRange is the range of the kernel_args attribute.
	KernelArgsRange hcl.Range
	// CPUGovernor is the cpufreq governor every CPU must use.
	CPUGovernor Attr[string]

	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// KernelFlavour is which NVIDIA kernel modules a driver installs, as
// NVIDIA's driver installation guide names them.
type KernelFlavour string

// Kernel-module flavours; the spec's kernel_module accepts these words.
const (
	// KernelOpen is the open GPU kernel modules (the default from R560,
	// the only flavour from R620, required by Blackwell).
	KernelOpen KernelFlavour = "open"
	// KernelProprietary is the closed modules (required before Turing).
	KernelProprietary KernelFlavour = "proprietary"
)

// Driver is the NVIDIA driver and the services that come with it.
type Driver struct {
	// Version is the exact driver release ("550.127.08") or a branch ("550").
	Version Attr[Version]
	// KernelModule is the kernel-module flavour the spec asks for.
	KernelModule Attr[KernelFlavour]
	// PersistenceMode keeps nvidia-persistenced running.
	PersistenceMode Attr[bool]
	// FabricManager installs and runs nvidia-fabricmanager (NVSwitch systems).
	FabricManager Attr[bool]
	// Peermem loads nvidia-peermem for GPUDirect RDMA.
	Peermem Attr[bool]
	// IMEX installs and runs nvidia-imex at the driver's release
	// (multi-node NVLink: GB200/GB300 NVL72 trays).
	IMEX Attr[bool]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// VersionedBlock is a block that pins one component's version: cuda, nccl
// or dcgm (the Component it pins is the field it is decoded into).
type VersionedBlock struct {
	// Version is the pinned version.
	Version Attr[Version]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// Container is the container runtime and its GPU-relevant defaults.
type Container struct {
	// Runtime is "docker", "containerd", "enroot" or "apptainer".
	Runtime Attr[string]
	// NvidiaContainerToolkit is the nvidia-container-toolkit version.
	NvidiaContainerToolkit Attr[Version]
	// DefaultRuntime makes the NVIDIA runtime the default.
	DefaultRuntime Attr[bool]
	// CDI asks for the toolkit's CDI specification of the node's GPUs,
	// kept naming the running driver's libraries.
	CDI Attr[bool]
	// EnrootCachePath and EnrootDataPath are enroot's image cache and
	// container storage (ENROOT_CACHE_PATH, ENROOT_DATA_PATH).
	EnrootCachePath, EnrootDataPath Attr[string]
	// EnrootRestrictDev is ENROOT_RESTRICT_DEV: /dev inside containers
	// limited to a minimal set plus the GPUs asked for.
	EnrootRestrictDev Attr[bool]
	// Pyxis loads pyxis's SPANK plugin into Slurm (srun --container-image).
	Pyxis Attr[bool]
	// Apptainer are the apptainer.conf directives of runtime "apptainer".
	Apptainer ApptainerSettings
	// EnrootVersion, PyxisVersion and ApptainerVersion are the releases of
	// the runtime's packages gpuform installs and holds; EnrootCaps adds
	// enroot+caps. A PyxisVersion sets Pyxis.
	EnrootVersion, PyxisVersion, ApptainerVersion Attr[Version]
	EnrootCaps                                    Attr[bool]
	// DefaultShmSize is the default /dev/shm size of containers.
	DefaultShmSize Attr[Size]
	// Ulimits are default container ulimits by name (memlock, stack, nofile, nproc).
	Ulimits map[string]Attr[Size]
	// UlimitsRange is the range of the ulimits attribute.
	UlimitsRange hcl.Range
	// Images are container images workloads on this node use.
	Images []Attr[string]
	// ImageDir is where enroot's .sqsh and Apptainer's .sif image files
	// are pulled to (runtime enroot or apptainer only).
	ImageDir Attr[string]
	// ImageDirShared says image_dir is shared storage (NFS, Lustre, a
	// directory other users write to): gpuform then pulls into it even
	// when users other than root may write there, and adopts an image
	// file another node pulled by its name. Without it, such a directory
	// is refused and a file gpuform did not pull on this node is pulled
	// again before the tag's link leads to it.
	ImageDirShared Attr[bool]
	// ContainerdRuntimeOptions override options the nvidia runtime would
	// otherwise inherit from containerd's default runtime (runc):
	// "true"/"false" are written as TOML booleans, whole numbers as
	// integers, anything else as a string.
	ContainerdRuntimeOptions map[string]Attr[string]
	// Pins are the digests the lock file records for Images, by
	// reference; set by ApplyLock.
	Pins map[string]ImagePin
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// Shm is the host's /dev/shm.
type Shm struct {
	// Size is an absolute size or a share of RAM.
	Size Attr[Size]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// NUMA is NUMA policy and the binding of GPUs to NUMA nodes.
type NUMA struct {
	// Balancing is kernel.numa_balancing.
	Balancing Attr[bool]
	// Binds assign GPUs to NUMA nodes.
	Binds []*NUMABind
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// NUMABind binds a set of GPUs to one NUMA node.
type NUMABind struct {
	// GPUs are GPU indexes, each with its own range.
	GPUs []Attr[int]
	// Node is the NUMA node.
	Node Attr[int]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// Affinity pairs GPUs with NICs and derives the NCCL environment.
type Affinity struct {
	// GPUNIC maps a GPU index to the RDMA device name of its NIC.
	GPUNIC map[int]Attr[string]
	// GPUNICRange is the range of the gpu_nic attribute.
	GPUNICRange hcl.Range
	// NCCLEnv writes /etc/nccl.conf from the pairing.
	NCCLEnv Attr[bool]
	// NCCLIBHCA is NCCL_IB_HCA, the HCAs NCCL may use.
	NCCLIBHCA []Attr[string]
	// NCCLSocketIfname is NCCL_SOCKET_IFNAME.
	NCCLSocketIfname Attr[string]
	// NCCLTopoFile asks for an NCCL topology file built from the hardware
	// description, written on virtual machines whose PCI tree hides the
	// GPU–NIC layout, and NCCL_TOPO_FILE pointing at it in nccl.conf.
	NCCLTopoFile Attr[bool]
	// NICIRQAffinity pins every interrupt of each RDMA NIC to the CPUs of
	// the NIC's NUMA node, at apply and at every boot, and keeps irqbalance
	// off them.
	NICIRQAffinity Attr[bool]
	// MTU is the MTU each RDMA device's network interface must have, keyed
	// by RDMA device name ("mlx5_0"); verify checks it.
	MTU map[string]Attr[int]
	// MTURange is the range of the mtu attribute.
	MTURange hcl.Range
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// Hugepages reserves huge pages.
type Hugepages struct {
	// Size is the page size (2MiB or 1GiB).
	Size Attr[Size]
	// Count is the number of pages.
	Count Attr[int]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// Verify says what a healthy node looks like.
type Verify struct {
	// NVML holds NVML-level expectations, nil when not written.
	NVML *VerifyNVML
	// NCCLTests are the NCCL self-tests to run.
	NCCLTests []*NCCLTest
	// Optional are the tools a tier runs that a node may lack: their
	// checks are skipped there instead of failing the gate.
	Optional []Attr[VerifyTool]
	// Isolation says when verify -tier fleet runs a node group's
	// multi-node tests on pairs of nodes to name the bad node; unset means
	// IsolationOnFailure.
	Isolation Attr[Isolation]
	// Outliers says what a GPU more than OutlierMarginPercent worse than
	// its peers (same model, same node or fleet) is; unset means
	// OutliersWarn.
	Outliers Attr[Outliers]
	// OutlierMarginPercent is the peer margin in percent; unset means
	// provision/outlier's DefaultMargin (10 %).
	OutlierMarginPercent Attr[float64]
	// Burnin is verify { burnin }: the burn-in tier's length and how long
	// its record qualifies a node; nil when not written (the defaults of
	// provision/verify/burnin).
	Burnin *VerifyBurnin
	// Kubernetes is verify { kubernetes }: the Job verify -engine
	// kubernetes runs on each node; nil when not written.
	Kubernetes *VerifyKubernetes
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// VerifyBurnin is verify { burnin }.
type VerifyBurnin struct {
	// Duration is how long verify -tier burnin's sustained load runs.
	Duration Attr[Duration]
	// MaxAge is how long after it finished a passed burn-in qualifies
	// the node for verify -require-burnin.
	MaxAge Attr[Duration]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// Isolation is when pairwise isolation runs.
type Isolation string

// Isolation modes.
const (
	// IsolationOnFailure runs pairs only when the group's run failed
	// (gating: a passing fleet costs nothing more).
	IsolationOnFailure Isolation = "on_failure"
	// IsolationAlways runs pairs after every group run (acceptance
	// testing: every node is measured with partners, and slow-but-passing
	// nodes are named as stragglers).
	IsolationAlways Isolation = "always"
	// IsolationOff never runs pairs.
	IsolationOff Isolation = "off"
)

// Outliers is how verify reports a GPU that is worse than its peers.
type Outliers string

// Outlier settings.
const (
	// OutliersWarn reports it as a warning: the check passes and says so.
	OutliersWarn Outliers = "warn"
	// OutliersFail fails the check.
	OutliersFail Outliers = "fail"
	// OutliersOff leaves peers uncompared.
	OutliersOff Outliers = "off"
)

// VerifyTool is a tool a verify tier runs on the node, as the verify
// block's optional list names it.
type VerifyTool string

// Tools a verify tier runs.
const (
	// ToolDCGM is dcgmi, run from the quick tier on.
	ToolDCGM VerifyTool = "dcgm"
	// ToolNCCLTests are the nccl-tests binaries (and mpirun/srun for
	// multi-node runs), run from the full tier on.
	ToolNCCLTests VerifyTool = "nccl_tests"
)

// VerifyTools lists the words optional accepts.
func VerifyTools() []VerifyTool { return []VerifyTool{ToolDCGM, ToolNCCLTests} }

// DCGMOptionalNote is what plan and verify say where a node's spec installs
// no DCGM: its quick tier then runs dcgmi only where it is installed, and
// says so rather than silently.
const DCGMOptionalNote = "dcgm: optional, the spec installs no DCGM"

// DCGMOptionalByDefault reports whether dcgm.diag is optional only because
// the node installs no DCGM (no dcgm block), not because verify { optional }
// lists it.
func (n *Node) DCGMOptionalByDefault() bool {
	return n.DCGM == nil && !n.Verify.IsOptional(ToolDCGM)
}

// IsOptional reports whether the verify block lets a node lack tool.
func (v *Verify) IsOptional(tool VerifyTool) bool {
	if v == nil {
		return false
	}
	for _, a := range v.Optional {
		if a.V == tool {
			return true
		}
	}
	return false
}

// VerifyNVML is the nvml block of verify.
type VerifyNVML struct {
	// GPUs is the expected GPU count.
	GPUs Attr[int]
	// ECC requires ECC mode on.
	ECC Attr[bool]
	// MinPCIeGen is the lowest acceptable PCIe generation.
	MinPCIeGen Attr[int]
	// MinPCIeWidth is the lowest acceptable PCIe width.
	MinPCIeWidth Attr[int]
	// NVLink is "all_active" or "none".
	NVLink Attr[string]
	// MaxTemperatureC is the highest acceptable GPU temperature.
	MaxTemperatureC Attr[int]
	// MIG is the MIG mode every GPU must be in: MIGEnabled or
	// MIGDisabled.
	MIG Attr[string]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// MIG modes of verify { nvml { mig } }.
const (
	MIGEnabled  = "enabled"
	MIGDisabled = "disabled"
)

// NCCLTest is one nccl-tests run with its pass floor.
type NCCLTest struct {
	// Name is the block label.
	Name string
	// Command is the nccl-tests command line.
	Command Attr[string]
	// MinBusBWGbps is the floor on the largest message's bus bandwidth, GB/s.
	MinBusBWGbps Attr[float64]
	// Timeout bounds the run, as a Go duration ("10m").
	Timeout Attr[Duration]
	// MultiNode says whether the command runs one job across several
	// hosts; unset, verify reads it from the launcher (mpirun, srun, …).
	MultiNode Attr[bool]
	// Network is the fabric between the nodes of a multi-node run (one of
	// NCCLNetworks); unset, verify reads it from the hardware's NICs.
	Network Attr[string]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// NCCLNetworks are the values of an nccl_test block's network: the
// fabrics multi-node busbw floors are published for (InfiniBand NDR and
// HDR, RoCE, Google Cloud GPUDirect-TCPXO and -TCPX, AWS EFA) and
// multi-node NVLink within an NVL72 rack (mnnvl).
func NCCLNetworks() []string {
	return []string{"ib_ndr", "ib_hdr", "roce", "gcp_tcpxo", "gcp_tcpx", "aws_efa", "mnnvl"}
}

// DrainMode is the scheduler apply drains a host through before changing
// it, as the rollout block's drain spells it.
type DrainMode string

// Drain modes; the rollout block's drain accepts these words.
const (
	// DrainSlurm drains the host in Slurm (scontrol) and resumes it once it
	// has converged.
	DrainSlurm DrainMode = "slurm"
	// DrainNone changes the host without asking any scheduler.
	DrainNone DrainMode = "none"
)

// RebootPolicy is whether apply may reboot a host whose change needs it,
// as the rollout block's reboot spells it.
type RebootPolicy string

// Reboot policies; the rollout block's reboot accepts these words.
const (
	// RebootAllow lets apply reboot a host whose change needs it.
	RebootAllow RebootPolicy = "allow"
	// RebootNever leaves the reboot to the operator.
	RebootNever RebootPolicy = "never"
	// RebootSlurm asks Slurm to reboot the host (scontrol reboot ASAP
	// nextstate=RESUME), so slurmd registers again before it takes jobs;
	// it needs drain = "slurm".
	RebootSlurm RebootPolicy = "slurm"
)

// Rollout controls how apply walks through the hosts of a node.
type Rollout struct {
	// Batch is how many hosts are changed at once.
	Batch Attr[int]
	// MaxFailures is the failure budget before no new batch starts.
	MaxFailures Attr[int]
	// Unit is what Batch and MaxFailures count: hosts (unset) or whole
	// NVLink domains.
	Unit Attr[RolloutUnit]
	// Drain is the scheduler to drain through; unset means none.
	Drain Attr[DrainMode]
	// Reboot is whether apply may reboot; unset means never.
	Reboot Attr[RebootPolicy]
	// StepTimeout bounds each apply step on the node's hosts ("45m").
	StepTimeout Attr[Duration]
	// DrainTimeout bounds waiting for a drained host's jobs ("2h").
	DrainTimeout Attr[Duration]
	// DrainPoll is the interval between Slurm state reads ("30s").
	DrainPoll Attr[Duration]
	// ForeignDrain is what apply does with a host drained or down for a
	// reason that is not gpuform's: skip it (default) or change it and
	// leave it drained with its reason.
	ForeignDrain Attr[ForeignDrainPolicy]
	// SlurmNodeName maps a host to its Slurm node name: a template where
	// {host} is the inventory name and {short} its first label; unset
	// means the node's own short host name.
	SlurmNodeName Attr[string]
	// SlurmClient is a host (controller or login node) that runs scontrol
	// for every host of the node; unset means each host runs its own.
	SlurmClient Attr[string]
	// DeclRange is the range of the block header.
	DeclRange hcl.Range
}

// Hardware is a declared node topology, usually from a built-in module.
type Hardware struct {
	// Name is a human name ("HGX H100 8-GPU").
	Name string
	// GPUModel is the GPU model ("H100-SXM5-80GB").
	GPUModel string
	// GPUModelRange is where gpu_model is written (the hardware value's
	// range when it is not a literal object).
	GPUModelRange hcl.Range
	// GPUModelUnknownOK accepts a gpu_model the knowledge base does not
	// list yet (hardware newer than its tables): gpu_model_unknown_ok = true.
	GPUModelUnknownOK bool
	// GPUCount is the number of GPUs.
	GPUCount int
	// Interconnect is "nvswitch", "nvlink_bridge", "pcie" or "nvlink_c2c".
	Interconnect string
	// NVLinkDomain is how many GPUs reach each other over NVLink.
	NVLinkDomain int
	// CPUSockets is the number of CPU sockets.
	CPUSockets int
	// NUMANodes is the number of NUMA nodes.
	NUMANodes int
	// Memory is the host RAM.
	Memory Size
	// CPUCores is the number of physical CPU cores over all sockets; 0
	// when not given.
	CPUCores int
	// NVMe is the local NVMe capacity for data (datasets, checkpoints);
	// zero when not given.
	NVMe Size
	// GPUs describe each GPU's placement.
	GPUs []HardwareGPU
	// NICs describe each network adapter port.
	NICs []HardwareNIC
	// Range is where the hardware value was assigned.
	Range hcl.Range
}

// HardwareGPU is one GPU in a hardware profile.
type HardwareGPU struct {
	// Index is the GPU's NVML index.
	Index int
	// PCI is its PCI address ("0000:18:00.0"); "" when not public.
	PCI string
	// NUMA is the NUMA node it is attached to.
	NUMA int
	// Switch names the PCIe switch above it; "" for a CPU root port.
	Switch string
}

// HardwareNIC is one NIC port in a hardware profile.
type HardwareNIC struct {
	// Name is the RDMA device name (mlx5_0) or netdev for plain Ethernet.
	Name string
	// Netdev is the network interface name ("ibp24s0").
	Netdev string
	// PCI is its PCI address.
	PCI string
	// NUMA is the NUMA node it is attached to.
	NUMA int
	// Switch names the PCIe switch above it; "" for a CPU root port.
	Switch string
	// Link is "infiniband", "ethernet" or "roce".
	Link string
	// SpeedGbps is the port speed in Gb/s.
	SpeedGbps int
	// RDMA is true for an RDMA-capable port.
	RDMA bool
}

// GPU returns the GPU with the given index.
func (h *Hardware) GPU(index int) (HardwareGPU, bool) {
	for _, g := range h.GPUs {
		if g.Index == index {
			return g, true
		}
	}
	return HardwareGPU{}, false
}

// NIC returns the NIC with the given RDMA device or netdev name.
func (h *Hardware) NIC(name string) (HardwareNIC, bool) {
	for _, n := range h.NICs {
		if n.Name == name || (n.Netdev != "" && n.Netdev == name) {
			return n, true
		}
	}
	return HardwareNIC{}, false
}

// HasRDMA reports whether any NIC is RDMA-capable.
func (h *Hardware) HasRDMA() bool {
	for _, n := range h.NICs {
		if n.RDMA {
			return true
		}
	}
	return false
}
