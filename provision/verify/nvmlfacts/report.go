package nvmlfacts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/gpuform/gpuform/internal/jsonformat"
)

// Source values say which path produced a Report.
const (
	// SourceNVML is a Report read through libnvidia-ml by the agent.
	SourceNVML = "nvml"
	// SourceNvidiaSMI is a Report parsed from `nvidia-smi -q -x`, the
	// fallback when the agent cannot run on the node.
	SourceNvidiaSMI = "nvidia-smi"
	// SourceMock is a Report read from one of the simulated NVML servers.
	SourceMock = "mock"
)

// Report is everything NVML said about one node. Pointer and slice fields are
// nil when the driver answered ERROR_NOT_SUPPORTED (or the fallback source
// does not carry the value): absent, not failed.
type Report struct {
	// FormatVersion is jsonformat.Version at the time of writing.
	FormatVersion string `json:"format_version"`
	// Source says how the facts were read: SourceNVML, SourceNvidiaSMI or SourceMock.
	Source string `json:"source"`
	// Mock names the simulated system when Source is SourceMock.
	Mock string `json:"mock,omitempty"`
	// DriverVersion is the kernel driver version, e.g. "550.54.15".
	DriverVersion string `json:"driver_version"`
	// CUDADriverVersion is the CUDA version the driver supports, e.g. "12.4".
	CUDADriverVersion string `json:"cuda_driver_version,omitempty"`
	// NVMLVersion is the NVML library version, e.g. "12.550.54.15".
	NVMLVersion string `json:"nvml_version,omitempty"`
	// GPUs lists every GPU NVML enumerated, in NVML index order.
	GPUs []GPU `json:"gpus"`
	// GPUTopology holds the topology common ancestor of every GPU pair.
	GPUTopology []GPUPair `json:"gpu_topology,omitempty"`
	// NICTopology holds the common ancestor of every GPU with every NIC the
	// caller asked about.
	NICTopology []NICPair `json:"nic_topology,omitempty"`
	// XID is the result of the XID listening window; nil when it was skipped.
	XID *XIDWatch `json:"xid,omitempty"`
	// Processes lists the compute processes on the GPUs; nil when they
	// were not asked for or the source cannot list them.
	Processes *Processes `json:"processes,omitempty"`
	// NotCollected lists facts the source cannot provide (Fact* names), so
	// that checks on them are skipped instead of failed.
	NotCollected []string `json:"not_collected,omitempty"`
	// Warnings lists NVML calls that failed with something other than
	// ERROR_NOT_SUPPORTED; the value they would have filled is absent.
	Warnings []string `json:"warnings,omitempty"`
}

// Fabric is one GPU's NVLink fabric state as NVML reports it.
type Fabric struct {
	// State is "Not Supported", "Not Started", "In Progress" or
	// "Completed", as nvidia-smi prints NVML_GPU_FABRIC_STATE_*.
	State string `json:"state"`
	// Status is the registration's result, meaningful once State is
	// Completed: "Success" or the NVML error's name as nvidia-smi prints
	// it ("Insufficient Resources").
	Status string `json:"status"`
	// CliqueID is the fabric clique the GPU belongs to; 0 when none.
	CliqueID uint32 `json:"clique_id"`
	// ClusterUUID is the fabric cluster's UUID; all zeros when none.
	ClusterUUID string `json:"cluster_uuid"`
}

// Fact names for Report.NotCollected.
const (
	FactNVLink   = "nvlink"
	FactNUMA     = "numa_node"
	FactTopology = "topology"
	FactXID      = "xid"
	// FactFabric is the GPUs' NVLink fabric state (Fabric).
	FactFabric = "fabric"
)

// Collected reports whether the source of r could provide fact.
func (r *Report) Collected(fact string) bool {
	for _, f := range r.NotCollected {
		if f == fact {
			return false
		}
	}
	return true
}

// GPU is what NVML reports for one device.
type GPU struct {
	// Index is the NVML device index.
	Index int `json:"index"`
	// VBIOS is the GPU's VBIOS version (nvmlDeviceGetVbiosVersion,
	// nvidia-smi's "VBIOS Version"); "" when not reported. A field added
	// to the report.
	VBIOS string `json:"vbios,omitempty"`
	// Fabric is the GPU's NVLink fabric registration (nvmlDeviceGetGpuFabricInfo,
	// nvidia-smi -q's "Fabric" section); nil where the GPU or driver does not
	// report one (NOT_SUPPORTED: no multi-node NVLink). A field added to the
	// report.
	Fabric *Fabric `json:"fabric,omitempty"`
	// UUID is the GPU's UUID, "GPU-…".
	UUID string `json:"uuid"`
	// Name is the product name as the driver reports it, e.g. "NVIDIA H100 80GB HBM3".
	Name string `json:"name"`
	// BusID is the PCI address, "00000000:18:00.0" as NVML prints it.
	BusID string `json:"pci_bus_id"`
	// Serial is the board serial number (nvmlDeviceGetSerial, nvidia-smi's
	// "Serial Number"): what an RMA ticket asks for; "" when not reported.
	Serial string `json:"serial,omitempty"`
	// Virtualization is the GPU's virtualization mode as nvidia-smi names
	// it ("None", "Pass-Through", "VGPU", "Host VGPU", "Host VSGA"); a GPU
	// passed through to a VM sits on a virtual PCIe topology.
	Virtualization string `json:"virtualization_mode,omitempty"`
	// PCIDeviceID is the combined device/vendor id, e.g. "0x233010DE".
	PCIDeviceID string `json:"pci_device_id,omitempty"`
	// MinorNumber is the GPU's device minor (nvmlDeviceGetMinorNumber):
	// the N of /dev/nvidiaN, which Slurm's NVML AutoDetect reports as the
	// GPU's File. The driver gives it when it probes the GPU, so it stays
	// while NVML renumbers the GPUs after one that fell off the bus; nil
	// when not reported (an older agent; nvidia-smi -q -x prints it as
	// minor_number).
	MinorNumber *int `json:"minor_number,omitempty"`
	// NUMANode is the NUMA node closest to the GPU (host memory affinity,
	// or the GPU's own node on coherent platforms).
	NUMANode *int `json:"numa_node,omitempty"`
	// CPUAffinity is the ideal CPU set of the GPU as a cpulist, e.g. "0-47,96-143".
	CPUAffinity string `json:"cpu_affinity,omitempty"`
	// PersistenceMode is true when persistence mode is enabled.
	PersistenceMode *bool `json:"persistence_mode,omitempty"`
	// ECC is the ECC mode and uncorrectable error counts.
	ECC *ECC `json:"ecc,omitempty"`
	// RetiredPages is the page-retirement state (pre-Ampere GPUs).
	RetiredPages *RetiredPages `json:"retired_pages,omitempty"`
	// RemappedRows is the row-remapper state (Ampere and later).
	RemappedRows *RemappedRows `json:"remapped_rows,omitempty"`
	// PCIe is the PCIe link state.
	PCIe *PCIeLink `json:"pcie,omitempty"`
	// NVLinks lists the NVLink links NVML knows for this GPU; nil without NVLink.
	NVLinks []NVLink `json:"nvlinks,omitempty"`
	// TemperatureC is the GPU core temperature in degrees Celsius.
	TemperatureC *int `json:"temperature_c,omitempty"`
	// PowerLimitW is the enforced power limit in watts.
	PowerLimitW *float64 `json:"power_limit_w,omitempty"`
	// Throttle is the set of active clocks event (throttle) reasons.
	Throttle *Throttle `json:"throttle,omitempty"`
	// MIG is the MIG mode; nil on GPUs without MIG.
	MIG *MIG `json:"mig,omitempty"`
}

// ECC is the ECC state of one GPU.
type ECC struct {
	// Enabled is the current ECC mode.
	Enabled bool `json:"enabled"`
	// PendingEnabled is the ECC mode after the next reboot.
	PendingEnabled bool `json:"pending_enabled"`
	// VolatileUncorrected counts uncorrectable errors since the driver loaded.
	VolatileUncorrected *uint64 `json:"volatile_uncorrected,omitempty"`
	// AggregateUncorrected counts uncorrectable errors over the GPU's life.
	AggregateUncorrected *uint64 `json:"aggregate_uncorrected,omitempty"`
}

// RetiredPages is the dynamic page retirement state of pre-Ampere GPUs.
type RetiredPages struct {
	// MultipleSingleBit is the number of pages retired for repeated single-bit errors.
	MultipleSingleBit int `json:"multiple_single_bit"`
	// DoubleBit is the number of pages retired for double-bit errors.
	DoubleBit int `json:"double_bit"`
	// Pending is true when a retirement waits for the next reset.
	Pending bool `json:"pending"`
}

// RemappedRows is the row-remapper state of Ampere and later GPUs.
type RemappedRows struct {
	// Corrected is the number of rows remapped for correctable errors.
	Corrected int `json:"corrected"`
	// Uncorrected is the number of rows remapped for uncorrectable errors.
	Uncorrected int `json:"uncorrected"`
	// Pending is true when a remap waits for a GPU reset.
	Pending bool `json:"pending"`
	// Failure is true when a remap failed (NVIDIA: the GPU needs service).
	Failure bool `json:"failure"`
}

// PCIeLink is the PCIe link state of one GPU.
type PCIeLink struct {
	// CurrentGen is the generation the link runs at now (drops at idle).
	CurrentGen int `json:"current_gen"`
	// MaxGen is the highest generation the GPU and its slot both support.
	MaxGen int `json:"max_gen"`
	// GPUMaxGen is the highest generation the GPU itself supports; 0 when unknown.
	GPUMaxGen int `json:"gpu_max_gen,omitempty"`
	// CurrentWidth is the number of lanes the link runs with now.
	CurrentWidth int `json:"current_width"`
	// MaxWidth is the widest link the GPU and slot support.
	MaxWidth int `json:"max_width"`
}

// NVLink is one NVLink link of a GPU.
type NVLink struct {
	// Link is the link number.
	Link int `json:"link"`
	// Active is true when the link state is enabled.
	Active bool `json:"active"`
	// RemoteBusID is the PCI address of the far end (a peer GPU or an NVSwitch).
	RemoteBusID string `json:"remote_pci_bus_id,omitempty"`
	// RemoteType is "gpu", "switch", "ibmnpu" or "unknown".
	RemoteType string `json:"remote_type,omitempty"`
	// Errors are an active link's data-link error counters
	// (nvmlDeviceGetNvLinkErrorCounter); nil when NVML does not report
	// them for the link, so a burn-in cannot count them.
	Errors *NVLinkErrors `json:"errors,omitempty"`
}

// NVLinkErrors are one NVLink link's error counters since the driver
// loaded (or nvmlDeviceResetNvLinkErrorCounters): flits replayed, link
// recoveries, flits and data with a CRC error. A healthy link under load
// keeps them still; a burn-in compares them before and after.
type NVLinkErrors struct {
	Replay   uint64 `json:"replay"`
	Recovery uint64 `json:"recovery"`
	CRCFlit  uint64 `json:"crc_flit"`
	CRCData  uint64 `json:"crc_data"`
}

// Throttle is the clocks event reason bitmask and its decoded names.
type Throttle struct {
	// Mask is the raw NVML clocks event reason bitmask.
	Mask uint64 `json:"mask"`
	// Active names the reasons set in Mask (see ThrottleReasonNames).
	Active []string `json:"active"`
}

// MIG is the MIG mode of a GPU.
type MIG struct {
	// Enabled is the current MIG mode.
	Enabled bool `json:"enabled"`
	// PendingEnabled is the MIG mode after the next GPU reset.
	PendingEnabled bool `json:"pending_enabled"`
}

// GPUPair is the topology common ancestor of two GPUs.
type GPUPair struct {
	// A is the lower GPU index.
	A int `json:"a"`
	// B is the higher GPU index.
	B int `json:"b"`
	// Level is the PCIe common ancestor; "" when only NVLinks is known
	// (`nvidia-smi topo -m` shows NV# instead of the PCIe path).
	Level Level `json:"level,omitempty"`
	// NVLinks is the number of bonded NVLinks between the pair as
	// `nvidia-smi topo -m` prints it (NV18); 0 when not reported.
	NVLinks int `json:"nvlinks,omitempty"`
}

// Virtualization modes as nvidia-smi names them (nvmlGpuVirtualizationMode).
const (
	// VirtNone is a GPU on bare metal.
	VirtNone = "None"
	// VirtPassThrough is a whole GPU passed through to a virtual machine.
	VirtPassThrough = "Pass-Through"
	// VirtVGPU is a virtual GPU inside a virtual machine.
	VirtVGPU = "VGPU"
)

// InVM reports whether the GPU is seen from inside a virtual machine
// (passed through or a vGPU): its PCIe link and topology are what the
// hypervisor presents.
func (g *GPU) InVM() bool {
	return g.Virtualization == VirtPassThrough || g.Virtualization == VirtVGPU
}

// NICPair is the topology common ancestor of a GPU and a NIC.
type NICPair struct {
	// GPU is the GPU index.
	GPU int `json:"gpu"`
	// NIC is the NIC's name as given by the caller (e.g. "mlx5_0").
	NIC string `json:"nic"`
	// NICBusID is the NIC's PCI address.
	NICBusID string `json:"nic_pci_bus_id"`
	// Level is the common ancestor.
	Level Level `json:"level"`
}

// XIDWatch is the outcome of listening for XID events.
type XIDWatch struct {
	// WindowMS is how long the agent listened, in milliseconds.
	WindowMS int64 `json:"window_ms"`
	// Events lists the XIDs seen, in arrival order.
	Events []XIDEvent `json:"events"`
}

// XIDEvent is one XID critical error reported during the window.
type XIDEvent struct {
	// GPU is the index of the GPU that raised it; -1 when unknown.
	GPU int `json:"gpu"`
	// XID is the XID number (NVIDIA's "XID errors" catalogue).
	XID uint64 `json:"xid"`
}

// Throttle reason names, one per NVML clocks event reason bit, in the
// wording nvidia-smi uses for `clocks_event_reasons` so that the agent and
// the nvidia-smi fallback produce the same names.
const (
	ThrottleGPUIdle              = "gpu_idle"
	ThrottleApplicationsClocks   = "applications_clocks_setting"
	ThrottleSWPowerCap           = "sw_power_cap"
	ThrottleHWSlowdown           = "hw_slowdown"
	ThrottleSyncBoost            = "sync_boost"
	ThrottleSWThermalSlowdown    = "sw_thermal_slowdown"
	ThrottleHWThermalSlowdown    = "hw_thermal_slowdown"
	ThrottleHWPowerBrakeSlowdown = "hw_power_brake_slowdown"
	ThrottleDisplayClocks        = "display_clocks_setting"
)

// throttleBits maps NVML's nvmlClocksEventReason* bits (nvml.h) to names.
type throttleBit struct {
	bit  uint64
	name string
}

func throttleBits() []throttleBit {
	return []throttleBit{
		{0x1, ThrottleGPUIdle},
		{0x2, ThrottleApplicationsClocks},
		{0x4, ThrottleSWPowerCap},
		{0x8, ThrottleHWSlowdown},
		{0x10, ThrottleSyncBoost},
		{0x20, ThrottleSWThermalSlowdown},
		{0x40, ThrottleHWThermalSlowdown},
		{0x80, ThrottleHWPowerBrakeSlowdown},
		{0x100, ThrottleDisplayClocks},
	}
}

// ThrottleReasonNames decodes an NVML clocks event reason bitmask into names.
// Bits without a name are reported as "0x…" so nothing is silently dropped.
func ThrottleReasonNames(mask uint64) []string {
	names := []string{}
	rest := mask
	for _, b := range throttleBits() {
		if mask&b.bit != 0 {
			names = append(names, b.name)
			rest &^= b.bit
		}
	}
	if rest != 0 {
		names = append(names, fmt.Sprintf("0x%x", rest))
	}
	return names
}

// ThrottleMask is the inverse of ThrottleReasonNames for known names.
func ThrottleMask(names []string) uint64 {
	var m uint64
	for _, n := range names {
		for _, b := range throttleBits() {
			if b.name == n {
				m |= b.bit
			}
		}
	}
	return m
}

// GPUByIndex returns the GPU with NVML index i, or nil.
func (r *Report) GPUByIndex(i int) *GPU {
	for k := range r.GPUs {
		if r.GPUs[k].Index == i {
			return &r.GPUs[k]
		}
	}
	return nil
}

// Encode writes r as indented JSON followed by a newline.
func (r *Report) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Decode reads a Report and refuses a format it does not understand, so a
// controller never judges a node from fields it misread.
func Decode(data []byte) (*Report, error) {
	var r Report
	if err := unmarshalAfterNoise(data, &r); err != nil {
		return nil, fmt.Errorf("decoding NVML report: %w", err)
	}
	if !jsonformat.Compatible(r.FormatVersion) {
		return nil, fmt.Errorf("NVML report has format_version %q, this gpuform reads %s.x (agent and controller differ in version)", r.FormatVersion, jsonformat.Major())
	}
	return &r, nil
}

// unmarshalAfterNoise decodes the JSON object in data into v. The agent runs
// through the user's login shell, whose rc files may print to stdout before
// it (a banner, "Loading modules", sometimes without a newline): when data
// does not decode whole, each later '{' is tried as the object's start, the
// first few dozen only, and the first error is returned if none decodes.
func unmarshalAfterNoise(data []byte, v any) error {
	first := json.Unmarshal(data, v)
	if first == nil {
		return nil
	}
	off := 0
	for tries := 0; tries < 32; tries++ {
		i := bytes.IndexByte(data[off+1:], '{')
		if i < 0 {
			break
		}
		off += 1 + i
		if json.Valid(data[off:]) {
			return json.Unmarshal(data[off:], v)
		}
	}
	return first
}
