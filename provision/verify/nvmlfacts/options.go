package nvmlfacts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrNoCgo is returned by RunAgent and CollectAgent in binaries built with
// CGO_ENABLED=0: go-nvml (and its mocks) need cgo, so such a binary cannot
// be the agent and verify falls back to nvidia-smi. It is declared in
// every build so callers can test for it.
var ErrNoCgo = errors.New("this gpuform was built without cgo and cannot read NVML; verify falls back to nvidia-smi -q -x")

// Options tune one Collect pass.
type Options struct {
	// XIDWindow is how long to listen for XID critical errors after the
	// facts are read; 0 skips the listening window.
	XIDWindow time.Duration
	// NICs are the NICs whose common ancestor with every GPU is reported.
	NICs []NIC
	// Topology answers GPU–NIC common ancestors; nil reads /sys.
	Topology PCITopology
	// MaxCPUs bounds the CPU affinity mask read from NVML; 0 means 1024.
	MaxCPUs int
	// MaxNUMANodes bounds the memory affinity mask; 0 means 64.
	MaxNUMANodes int
	// Processes asks for the compute processes on each GPU and their
	// placement from /proc (verify -processes).
	Processes bool
	// ProcRoot is prepended to /proc paths of the processes; "" means "/".
	ProcRoot string
}

// NIC names a network device by the name operators use and its PCI address.
type NIC struct {
	// Name is the RDMA or netdev name, e.g. "mlx5_0".
	Name string `json:"name"`
	// BusID is the PCI address, e.g. "0000:1a:00.0".
	BusID string `json:"pci_bus_id"`
}

// AgentOptions configure one run of `gpuform agent nvml --json`.
type AgentOptions struct {
	// Collect is passed to Collect. When Collect.NICs is empty the agent
	// discovers RDMA NICs from /sys/class/infiniband (or, with Mock set,
	// uses the simulated NICs).
	Collect Options
	// Mock names a simulated system (MockNames) to read instead of the real
	// NVML; empty means the real libnvidia-ml.so.1. Sim nodes set it.
	Mock string
	// Faults are planted in the mock; ignored without Mock.
	Faults []Fault
	// SysRoot is prepended to /sys paths for NIC discovery and topology
	// (tests and simulated root filesystems); "" means "/".
	SysRoot string
	// SimRoot, with Mock, is a simulated node's root: the processes of
	// Collect.Processes are replayed from its SimProcessesFile and read
	// from its /proc.
	SimRoot string
	// DriverVersion, with Mock, is the driver version the simulated system
	// reports instead of the mock's own: a simulated node's loaded driver
	// is the one in its root's /proc/driver/nvidia/version, which apply
	// and reboot change.
	DriverVersion string
}

// Mock system names accepted by NewMock and AgentOptions.Mock.
const (
	MockDGXA100  = "dgxa100"
	MockDGXH100  = "dgxh100"
	MockDGXH200  = "dgxh200"
	MockDGXB200  = "dgxb200"
	MockL40SPCIe = "l40s-pcie"
	MockGH200    = "gh200"
	// MockGB200Tray and MockGB300Tray are one compute tray of a GB200 or
	// GB300 NVL72 rack: 4 GPUs on two Grace CPUs.
	MockGB200Tray = "gb200-nvl72-tray"
	MockGB300Tray = "gb300-nvl72-tray"
)

// MockNames lists the simulated systems, sorted.
func MockNames() []string {
	return []string{MockDGXA100, MockDGXB200, MockDGXH100, MockDGXH200, MockGB200Tray, MockGB300Tray, MockGH200, MockL40SPCIe}
}

// FaultKind names a fault that NewMock plants in a simulated system.
type FaultKind string

// Faults a simulated system can carry; each one should fail exactly one
// verify check.
const (
	// FaultDropGPU removes a GPU from enumeration (fallen off the bus).
	FaultDropGPU FaultKind = "drop_gpu"
	// FaultECCOff turns ECC off on a GPU.
	FaultECCOff FaultKind = "ecc_off"
	// FaultUncorrectableECC adds uncorrectable ECC errors on a GPU.
	FaultUncorrectableECC FaultKind = "ecc_uncorrectable"
	// FaultRemapPending leaves a row remap pending on a GPU.
	FaultRemapPending FaultKind = "remap_pending"
	// FaultRemapFailure records a failed row remap on a GPU.
	FaultRemapFailure FaultKind = "remap_failure"
	// FaultPCIeX8 trains a GPU's link at x8 instead of its maximum width.
	FaultPCIeX8 FaultKind = "pcie_x8"
	// FaultPCIeGenDown trains a GPU's link one generation below the GPU's
	// maximum (Gen4 instead of Gen5 on Hopper and Blackwell).
	FaultPCIeGenDown FaultKind = "pcie_gen_down"
	// FaultPCIeIdle is not a fault: an idle GPU whose link has dropped to
	// Gen1 to save power, with the GPU-idle clock event reason set, as a
	// real idle GPU reports it. It must fail no check.
	FaultPCIeIdle FaultKind = "pcie_idle"
	// FaultNVLinkDown takes NVLink link 0 of a GPU down.
	FaultNVLinkDown FaultKind = "nvlink_down"
	// FaultNVLinkErrors gives NVLink link 0 of a GPU replayed flits:
	// its replay error counter reads Value (nvlink_errors:4:120), 100
	// when none is given. A counter that does not move is no fault by
	// itself; a burn-in fails a counter that grew during its load.
	FaultNVLinkErrors FaultKind = "nvlink_errors"
	// FaultWrongNUMA moves a GPU to the other socket's NUMA node.
	FaultWrongNUMA FaultKind = "wrong_numa"
	// FaultNICAcrossSYS puts a GPU's paired NIC across the socket interconnect.
	FaultNICAcrossSYS FaultKind = "nic_sys"
	// FaultPersistenceOff disables persistence mode on a GPU.
	FaultPersistenceOff FaultKind = "persistence_off"
	// FaultHot raises a GPU's temperature to 95 °C.
	FaultHot FaultKind = "hot"
	// FaultThermalSlowdown sets the hardware thermal slowdown throttle reason.
	FaultThermalSlowdown FaultKind = "thermal_slowdown"
	// FaultXID raises XID Value on a GPU during the listening window.
	FaultXID FaultKind = "xid"
	// FaultFabricNotStarted leaves a rack-scale GPU's NVLink fabric
	// registration Not Started (clique 0, no cluster), as a tray whose
	// NVLink Switch trays have not trained the fabric reports it.
	FaultFabricNotStarted FaultKind = "fabric_not_started"
)

// Fault is one planted fault.
type Fault struct {
	// Kind is the fault.
	Kind FaultKind
	// GPU is the GPU index it applies to, in the layout's order (the
	// order before any GPU is dropped).
	GPU int
	// BusID, when set, names the GPU by PCI address instead of GPU: the
	// mock resolves it against its layout. A simulated node's faults are
	// written this way, so they name the same device its sysfs does.
	BusID string
	// Value is the XID number for FaultXID.
	Value uint64
}

// ParseFault reads "kind:gpu" or "xid:gpu:value", e.g. "nvlink_down:3",
// or the same with the GPU named by PCI address after an @:
// "pcie_x8@0000:c3:00.0", "xid@0000:9d:00.0:79".
func ParseFault(s string) (Fault, error) {
	if kind, rest, ok := strings.Cut(s, "@"); ok {
		return parseBusFault(s, kind, rest)
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return Fault{}, fmt.Errorf("fault %q: want KIND:GPU or xid:GPU:XID", s)
	}
	f := Fault{Kind: FaultKind(parts[0])}
	if !knownFault(f.Kind) {
		return Fault{}, fmt.Errorf("fault %q: unknown kind %q", s, parts[0])
	}
	gpu, err := strconv.Atoi(parts[1])
	if err != nil || gpu < 0 {
		return Fault{}, fmt.Errorf("fault %q: GPU must be an index", s)
	}
	f.GPU = gpu
	if len(parts) == 3 {
		v, err := strconv.ParseUint(parts[2], 10, 64)
		if err != nil {
			return Fault{}, fmt.Errorf("fault %q: XID must be a number", s)
		}
		f.Value = v
	}
	if f.Kind == FaultXID && f.Value == 0 {
		return Fault{}, fmt.Errorf("fault %q: xid needs a value, e.g. xid:%d:79", s, gpu)
	}
	return f, nil
}

// parseBusFault reads the "KIND@BUSID" and "xid@BUSID:XID" forms.
func parseBusFault(s, kind, rest string) (Fault, error) {
	f := Fault{Kind: FaultKind(kind), GPU: -1}
	if !knownFault(f.Kind) {
		return Fault{}, fmt.Errorf("fault %q: unknown kind %q", s, kind)
	}
	bus := rest
	if f.Kind == FaultXID {
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			return Fault{}, fmt.Errorf("fault %q: xid needs a value, e.g. xid@%s:79", s, rest)
		}
		v, err := strconv.ParseUint(rest[i+1:], 10, 64)
		if err != nil || v == 0 {
			return Fault{}, fmt.Errorf("fault %q: XID must be a number", s)
		}
		bus, f.Value = rest[:i], v
	}
	b, err := NormalizeBusID(bus)
	if err != nil {
		return Fault{}, fmt.Errorf("fault %q: %w", s, err)
	}
	f.BusID = b
	return f, nil
}

func knownFault(k FaultKind) bool {
	switch k {
	case FaultDropGPU, FaultECCOff, FaultUncorrectableECC, FaultRemapPending, FaultRemapFailure,
		FaultPCIeX8, FaultPCIeGenDown, FaultPCIeIdle, FaultNVLinkDown, FaultNVLinkErrors, FaultWrongNUMA, FaultNICAcrossSYS,
		FaultPersistenceOff, FaultHot, FaultThermalSlowdown, FaultXID, FaultFabricNotStarted:
		return true
	}
	return false
}

// MockLayout is the PCI and NUMA layout a simulated system reports: where
// each GPU and NIC sits and which CPUs belong to each NUMA node. The
// built-in systems carry the layouts of gpuform's hardware modules; a
// caller can pass its own (NewMockLayout) to simulate a spec's hardware.
type MockLayout struct {
	// GPUs in NVML index order.
	GPUs []MockDevice
	// NICs are the RDMA NICs.
	NICs []MockDevice
	// CPUs maps a NUMA node to its cpulist, e.g. 0 → "0-55,112-167".
	CPUs map[int]string
	// SameSwitch is the level of two devices under one PCIe switch: PIX
	// or PXB, as the platform's `nvidia-smi topo -m` shows it.
	SameSwitch Level
	// C2CGPUs says the GPUs hang off their Grace CPU by NVLink-C2C, not a
	// PCIe root port: every NIC is SYS from every GPU, as a GB200 tray's
	// `nvidia-smi topo -m` prints it (sgl-project/sglang#11208).
	C2CGPUs bool
}

// MockDevice is one simulated PCI device.
type MockDevice struct {
	// Name is the RDMA device name of a NIC ("mlx5_0"); empty for GPUs.
	Name string
	// BusID is the PCI address, "0000:1b:00.0".
	BusID string
	// NUMA is the device's NUMA node.
	NUMA int
	// Switch names the PCIe switch the device sits under; "" means a CPU
	// root port of its own.
	Switch string
}
