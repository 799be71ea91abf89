//go:build cgo

package nvmlfacts

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxb200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// mockModel describes one simulated system. go-nvml's dgx* servers wire
// identity, versions and MIG only; everything Collect reads beyond that is
// filled from here.
//
// Sources of the values:
//   - GPU PCI bus ids are those printed by real nccl-tests runs on the same
//     GPU model (shared/fixtures/nccl-tests: A100 OCI BM.GPU4.8, H100
//     node005, H200 dgx-2d, B200 GCP A4), sorted into NVML index order.
//   - NVLink count, PCIe generation/width and power limit per model come
//     from shared/reference/gpu-models.tsv (A100 SXM4: 12 NVLink3 links
//     (secondary: 600 GB/s at 50 GB/s per link), Gen4 x16, 400 W; H100/H200
//     SXM: 18 links, Gen5 x16, 700 W; B200: 18 links, Gen5 x16, 1000 W;
//     L40S: no NVLink, Gen4 x16, 350 W).
//   - Real drivers name the H200 and B200 "NVIDIA H200" / "NVIDIA B200" and
//     the A100 "NVIDIA A100-SXM4-40GB" (nccl-tests fixtures), not go-nvml's
//     mock strings, so the names are overridden.
//
// Modelled, not measured (no public per-system source was found): the
// two-socket NUMA split (first half of the GPUs on node 0), the CPU numbering
// of each node, the NIC addresses (one NIC per GPU, "mlx5_<i>", on the
// GPU's PCIe switch), the PCIe switch grouping (two GPUs per switch on the
// A100 board as in shared/fixtures/nvidia-smi/topo-m-8xA100-nv12-17nic.txt,
// one per switch elsewhere), NVSwitch PCI addresses and the 35 °C idle
// temperature.
type mockModel struct {
	name          string
	newServer     func() *server.Server
	gpuName       string
	busIDs        []string
	nvlinks       int
	pcieGen       int
	pcieWidth     int
	powerW        float64
	gpusPerSwitch int
	nicLevel      Level
	noMIG         bool
}

// mockModels returns the simulated systems by name (a function, not a
// package variable, so nothing can change them at run time).
func mockModels() map[string]mockModel {
	return map[string]mockModel{
		MockDGXA100: {
			name: MockDGXA100, newServer: dgxa100.New, gpuName: "NVIDIA A100-SXM4-40GB",
			busIDs:  []string{"0f", "15", "51", "54", "8d", "92", "d6", "da"},
			nvlinks: 12, pcieGen: 4, pcieWidth: 16, powerW: 400, gpusPerSwitch: 2, nicLevel: LevelPXB,
		},
		MockDGXH100: {
			name: MockDGXH100, newServer: dgxh100.New, gpuName: "NVIDIA H100 80GB HBM3",
			busIDs:  []string{"18", "19", "6c", "6d", "96", "97", "c0", "c1"},
			nvlinks: 18, pcieGen: 5, pcieWidth: 16, powerW: 700, gpusPerSwitch: 1, nicLevel: LevelPIX,
		},
		MockDGXH200: {
			name: MockDGXH200, newServer: dgxh200.New, gpuName: "NVIDIA H200",
			busIDs:  []string{"1b", "43", "52", "61", "9d", "c3", "d1", "df"},
			nvlinks: 18, pcieGen: 5, pcieWidth: 16, powerW: 700, gpusPerSwitch: 1, nicLevel: LevelPIX,
		},
		MockDGXB200: {
			name: MockDGXB200, newServer: dgxb200.New, gpuName: "NVIDIA B200",
			busIDs:  []string{"8f", "90", "96", "97", "c4", "c5", "cb", "cc"},
			nvlinks: 18, pcieGen: 5, pcieWidth: 16, powerW: 1000, gpusPerSwitch: 1, nicLevel: LevelPIX,
		},
		MockL40SPCIe: {
			name: MockL40SPCIe, newServer: newL40SServer, gpuName: "NVIDIA L40S",
			// 0x61 is the L40S address in the nccl-tests L40S fixture; the
			// other seven are modelled.
			busIDs:  []string{"1a", "1b", "3d", "3e", "61", "62", "ce", "cf"},
			nvlinks: 0, pcieGen: 4, pcieWidth: 16, powerW: 350, gpusPerSwitch: 2, nicLevel: LevelPXB, noMIG: true,
		},
	}
}

// l40sConfig is an 8x L40S PCIe server (no NVLink, no MIG). go-nvml ships no L40S
// config; the PCI device id 0x26B9 is the L40S entry of the PCI ID
// repository (https://pci-ids.ucw.cz/read/PC/10de/26b9), compute capability
// 8.9 and 48 GB GDDR6 are from shared/reference/gpu-models.tsv.
func l40sConfig() gpus.Config {
	return gpus.Config{
		Name:         "NVIDIA L40S",
		Architecture: nvml.DEVICE_ARCH_ADA,
		Brand:        nvml.BRAND_NVIDIA,
		MemoryMB:     46068,
		CudaMajor:    8,
		CudaMinor:    9,
		PciDeviceId:  0x26B910DE,
	}
}

func newL40SServer() *server.Server {
	s, _ := server.New(
		server.WithGPUs(gpus.Multiple(8, l40sConfig())...),
		server.WithDriverVersion("550.54.15"),
		server.WithNVMLVersion("12.550.54.15"),
		server.WithCUDADriverVersion(12040),
	)
	return s
}

// MockSystem is a simulated node: an nvml.Interface built on go-nvml's
// mock server with every function Collect calls filled in, plus the PCI
// topology of its NICs.
type MockSystem struct {
	*server.Server
	model  mockModel
	faults []Fault
	gpus   []mockGPU
	nics   []NIC
}

type mockGPU struct {
	busID  string
	numa   int
	sw     int
	sysNIC bool
}

const mockCPUsPerNode = 64

// NewMock builds the named simulated system with the given faults planted.
func NewMock(name string, faults ...Fault) (*MockSystem, error) {
	m, ok := mockModels()[name]
	if !ok {
		return nil, fmt.Errorf("unknown NVML mock %q (known: %s)", name, strings.Join(MockNames(), ", "))
	}
	s := &MockSystem{Server: m.newServer(), model: m, faults: faults}
	n := len(s.Devices)
	for i := 0; i < n; i++ {
		numa := 0
		if i >= n/2 {
			numa = 1
		}
		s.gpus = append(s.gpus, mockGPU{
			busID: fmt.Sprintf("00000000:%s:00.0", strings.ToUpper(m.busIDs[i])),
			numa:  numa,
			sw:    i / m.gpusPerSwitch,
		})
		// The NIC sits on the GPU's switch: same bus range, next bus.
		b, _ := strconv.ParseUint(m.busIDs[i], 16, 8)
		s.nics = append(s.nics, NIC{Name: fmt.Sprintf("mlx5_%d", i), BusID: fmt.Sprintf("0000:%02x:00.0", (b+0x40)&0xff)})
	}
	for _, f := range faults {
		if f.GPU < 0 || f.GPU >= n {
			return nil, fmt.Errorf("fault %s: GPU %d does not exist on %s (%d GPUs)", f.Kind, f.GPU, name, n)
		}
		if f.Kind == FaultNICAcrossSYS {
			s.gpus[f.GPU].sysNIC = true
		}
	}
	events := &xidQueue{}
	for i, d := range s.Devices {
		s.wire(i, d.(*server.Device), events)
	}
	s.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return events.set(), nvml.SUCCESS }
	// A dropped GPU vanishes from enumeration like one that fell off the
	// bus; dropping happens last so the remaining devices keep their wiring.
	for k := len(faults) - 1; k >= 0; k-- {
		if faults[k].Kind == FaultDropGPU {
			idx := faults[k].GPU
			s.Devices = append(s.Devices[:idx:idx], s.Devices[idx+1:]...)
		}
	}
	return s, nil
}

// Name is the simulated system's name, e.g. "dgxh100".
func (s *MockSystem) Name() string { return s.model.name }

// NICs lists the simulated NICs, one per GPU, paired by index.
func (s *MockSystem) NICs() []NIC { return append([]NIC(nil), s.nics...) }

func (s *MockSystem) has(i int, k FaultKind) (Fault, bool) {
	for _, f := range s.faults {
		if f.GPU == i && f.Kind == k {
			return f, true
		}
	}
	return Fault{}, false
}

// CommonAncestor answers GPU–NIC topology from the modelled switch layout.
func (s *MockSystem) CommonAncestor(a, b string) (Level, error) {
	ga, na := s.find(a)
	gb, nb := s.find(b)
	switch {
	case ga < 0 && na < 0:
		return "", fmt.Errorf("no simulated PCI device at %s", a)
	case gb < 0 && nb < 0:
		return "", fmt.Errorf("no simulated PCI device at %s", b)
	}
	// Normalise to (GPU, NIC) when one side is a GPU.
	if ga < 0 {
		ga, na, gb, nb = gb, nb, ga, na
	}
	if ga >= 0 && nb >= 0 {
		if s.gpus[ga].sysNIC && nb == ga {
			return LevelSys, nil
		}
		return s.level(s.gpus[ga].sw, s.gpus[nb].sw, s.gpus[ga].numa, s.gpus[nb].numa, s.model.nicLevel), nil
	}
	if ga >= 0 && gb >= 0 {
		return s.level(s.gpus[ga].sw, s.gpus[gb].sw, s.gpus[ga].numa, s.gpus[gb].numa, LevelPXB), nil
	}
	return s.level(s.gpus[na].sw, s.gpus[nb].sw, s.gpus[na].numa, s.gpus[nb].numa, LevelPIX), nil
}

func (s *MockSystem) level(swA, swB, numaA, numaB int, same Level) Level {
	switch {
	case swA == swB:
		return same
	case numaA == numaB:
		return LevelNode
	}
	return LevelSys
}

// find returns the GPU or NIC index at a PCI address.
func (s *MockSystem) find(addr string) (gpu, nic int) {
	a, err := NormalizeBusID(addr)
	if err != nil {
		return -1, -1
	}
	for i, g := range s.gpus {
		if b, _ := NormalizeBusID(g.busID); b == a {
			return i, -1
		}
	}
	for i, n := range s.nics {
		if b, _ := NormalizeBusID(n.BusID); b == a {
			return -1, i
		}
	}
	return -1, -1
}

func (s *MockSystem) wire(i int, d *server.Device, events *xidQueue) {
	m := s.model
	g := s.gpus[i]
	// go-nvml draws a random UUID per construction; a fixed one keeps
	// reports and golden files stable.
	d.UUID = fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", crc(m.name), i)
	d.PciBusID = g.busID
	d.GetNameFunc = func() (string, nvml.Return) { return m.gpuName, nvml.SUCCESS }
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		p := nvml.PciInfo{PciDeviceId: d.Config.PciDeviceId}
		bus, _ := strconv.ParseUint(m.busIDs[i], 16, 8)
		p.Bus = uint32(bus)
		putCString(p.BusId[:], g.busID)
		return p, nvml.SUCCESS
	}
	numa := g.numa
	if _, bad := s.has(i, FaultWrongNUMA); bad {
		numa = 1 - numa
	}
	d.GetMemoryAffinityFunc = func(nodes int, _ nvml.AffinityScope) ([]uint, nvml.Return) {
		set := make([]uint, (nodes+63)/64)
		set[numa/64] |= 1 << uint(numa%64)
		return set, nvml.SUCCESS
	}
	// x86 drivers answer NOT_SUPPORTED here; only coherent platforms use it.
	d.GetNumaNodeIdFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetCpuAffinityFunc = func(n int) ([]uint, nvml.Return) {
		set := make([]uint, (n+63)/64)
		for c := numa * mockCPUsPerNode; c < (numa+1)*mockCPUsPerNode && c < len(set)*64; c++ {
			set[c/64] |= 1 << uint(c%64)
		}
		return set, nvml.SUCCESS
	}
	persistence := nvml.FEATURE_ENABLED
	if _, bad := s.has(i, FaultPersistenceOff); bad {
		persistence = nvml.FEATURE_DISABLED
	}
	d.GetPersistenceModeFunc = func() (nvml.EnableState, nvml.Return) { return persistence, nvml.SUCCESS }
	_, eccOff := s.has(i, FaultECCOff)
	d.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
		if eccOff {
			return nvml.FEATURE_DISABLED, nvml.FEATURE_DISABLED, nvml.SUCCESS
		}
		return nvml.FEATURE_ENABLED, nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	var unc uint64
	if _, bad := s.has(i, FaultUncorrectableECC); bad {
		unc = 2
	}
	d.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, _ nvml.EccCounterType) (uint64, nvml.Return) {
		if eccOff {
			// With ECC off the driver has no counters to report.
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		if t == nvml.MEMORY_ERROR_TYPE_UNCORRECTED {
			return unc, nvml.SUCCESS
		}
		return 0, nvml.SUCCESS
	}
	_, pending := s.has(i, FaultRemapPending)
	_, failure := s.has(i, FaultRemapFailure)
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) {
		unc := 0
		if pending || failure {
			unc = 1
		}
		return 0, unc, pending, failure, nvml.SUCCESS
	}
	// Ampere and later retire rows, not pages.
	d.GetRetiredPagesFunc = func(nvml.PageRetirementCause) ([]uint64, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED }
	d.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) {
		return nvml.FEATURE_DISABLED, nvml.ERROR_NOT_SUPPORTED
	}
	gen, maxGen, width := m.pcieGen, m.pcieGen, m.pcieWidth
	if _, bad := s.has(i, FaultPCIeGenDown); bad {
		// A slot or riser that only trains one generation lower caps the
		// negotiated maximum too; the GPU's own maximum stays.
		gen, maxGen = m.pcieGen-1, m.pcieGen-1
	}
	if _, bad := s.has(i, FaultPCIeX8); bad {
		width = 8
	}
	d.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return gen, nvml.SUCCESS }
	d.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return maxGen, nvml.SUCCESS }
	d.GetGpuMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return m.pcieGen, nvml.SUCCESS }
	d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return width, nvml.SUCCESS }
	d.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return m.pcieWidth, nvml.SUCCESS }
	_, linkDown := s.has(i, FaultNVLinkDown)
	d.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
		switch {
		case m.nvlinks == 0:
			return nvml.FEATURE_DISABLED, nvml.ERROR_NOT_SUPPORTED
		case l < 0 || l >= m.nvlinks:
			return nvml.FEATURE_DISABLED, nvml.ERROR_INVALID_ARGUMENT
		case linkDown && l == 0:
			return nvml.FEATURE_DISABLED, nvml.SUCCESS
		}
		return nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetNvLinkRemotePciInfoFunc = func(l int) (nvml.PciInfo, nvml.Return) {
		var p nvml.PciInfo
		if l < 0 || l >= m.nvlinks {
			return p, nvml.ERROR_INVALID_ARGUMENT
		}
		// Links spread over the NVSwitches round-robin (modelled addresses).
		putCString(p.BusId[:], fmt.Sprintf("00000000:%02X:00.0", 0xE0+l%4))
		return p, nvml.SUCCESS
	}
	d.GetNvLinkRemoteDeviceTypeFunc = func(l int) (nvml.IntNvLinkDeviceType, nvml.Return) {
		if l < 0 || l >= m.nvlinks {
			return nvml.NVLINK_DEVICE_TYPE_UNKNOWN, nvml.ERROR_INVALID_ARGUMENT
		}
		return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
	}
	d.GetTopologyCommonAncestorFunc = func(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
		o, ok := other.(*server.Device)
		if !ok {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		lvl, _ := s.CommonAncestor(g.busID, o.PciBusID)
		return map[Level]nvml.GpuTopologyLevel{
			LevelPIX: nvml.TOPOLOGY_SINGLE, LevelPXB: nvml.TOPOLOGY_MULTIPLE,
			LevelNode: nvml.TOPOLOGY_NODE, LevelSys: nvml.TOPOLOGY_SYSTEM,
		}[lvl], nvml.SUCCESS
	}
	temp, mask := uint32(35), uint64(0)
	if _, hot := s.has(i, FaultHot); hot {
		temp = 95
	}
	if _, slow := s.has(i, FaultThermalSlowdown); slow {
		mask = 0x40 // nvmlClocksEventReasonHwThermalSlowdown
	}
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return temp, nvml.SUCCESS }
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return uint32(m.powerW * 1000), nvml.SUCCESS }
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return mask, nvml.SUCCESS }
	d.GetCurrentClocksThrottleReasonsFunc = d.GetCurrentClocksEventReasonsFunc
	if m.noMIG {
		d.GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
	}
	d.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
	if f, ok := s.has(i, FaultXID); ok {
		events.push(nvml.EventData{Device: d, EventType: nvml.EventTypeXidCriticalError, EventData: f.Value})
	}
}

// xidQueue hands planted XID events to the event set, then behaves like an
// idle GPU: Wait blocks for its timeout and answers ERROR_TIMEOUT.
type xidQueue struct {
	mu     sync.Mutex
	events []nvml.EventData
}

func (q *xidQueue) push(e nvml.EventData) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.events = append(q.events, e)
}

func (q *xidQueue) set() nvml.EventSet {
	return &mock.EventSet{
		WaitFunc: func(ms uint32) (nvml.EventData, nvml.Return) {
			q.mu.Lock()
			if len(q.events) > 0 {
				e := q.events[0]
				q.events = q.events[1:]
				q.mu.Unlock()
				return e, nvml.SUCCESS
			}
			q.mu.Unlock()
			time.Sleep(time.Duration(ms) * time.Millisecond)
			return nvml.EventData{}, nvml.ERROR_TIMEOUT
		},
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
	}
}

func putCString(dst []int8, s string) {
	for k := 0; k < len(s) && k < len(dst)-1; k++ {
		dst[k] = int8(s[k])
	}
}

// crc is a tiny stable hash so every mock system gets its own UUID prefix.
func crc(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
