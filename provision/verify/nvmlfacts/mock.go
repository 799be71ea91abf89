//go:build cgo

package nvmlfacts

import (
	"fmt"
	"slices"
	"sort"
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

	"github.com/gpuform/gpuform/internal/cpulist"
)

// mockModel describes one simulated system. go-nvml's dgx* servers wire
// identity, versions and MIG only; everything Collect reads beyond that is
// filled from here. A zero pcieGen, powerW or nvlinks means the real
// platform does not report it (or no public source says what it reports),
// and the mock answers ERROR_NOT_SUPPORTED.
//
// NVLink count, PCIe generation/width and power limit per GPU model come
// from the knowledge base's kb/data/gpu-models.tsv: A100 SXM4 12 NVLink3 links (600 GB/s
// at 50 GB/s per link, secondary), Gen4 x16, 400 W; H100/H200 SXM 18 links,
// Gen5 x16, 700 W; B200 18 links, Gen5 x16, 1000 W; L40S no NVLink, Gen4
// x16, 350 W. Real drivers name the A100, H200 and B200 "NVIDIA
// A100-SXM4-40GB", "NVIDIA H200" and "NVIDIA B200" (nccl-tests fixtures), so
// go-nvml's mock names are overridden. The PCI/NUMA layouts are documented
// at each layout function.
type mockModel struct {
	name      string
	newServer func(n int) *server.Server
	gpuName   string
	layout    func() MockLayout
	nvlinks   int
	// fabric is the NVLink fabric registration the GPUs report (rack-scale
	// trays); nil answers NOT_SUPPORTED, as a board without multi-node
	// NVLink reports it here.
	fabric *nvml.GpuFabricInfo
	// vbios is the VBIOS version the GPUs report; "" answers
	// NOT_SUPPORTED (no model here has a published one).
	vbios     string
	pcieGen   int
	pcieWidth int
	powerW    float64
	noMIG     bool
}

// mockModels returns the simulated systems by name (a function, not a
// package variable, so nothing can change them at run time).
func mockModels() map[string]mockModel {
	return map[string]mockModel{
		MockDGXA100: {
			name: MockDGXA100, gpuName: "NVIDIA A100-SXM4-40GB", layout: dgxA100Layout,
			newServer: func(n int) *server.Server { return dgxa100.NewWithGPUs(gpus.Multiple(n, gpus.A100_SXM4_40GB)...) },
			nvlinks:   12, pcieGen: 4, pcieWidth: 16, powerW: 400,
		},
		MockDGXH100: {
			name: MockDGXH100, gpuName: "NVIDIA H100 80GB HBM3", layout: dgxH100Layout,
			newServer: func(n int) *server.Server { return dgxh100.NewWithGPUs(gpus.Multiple(n, gpus.H100_SXM5_80GB)...) },
			nvlinks:   18, pcieGen: 5, pcieWidth: 16, powerW: 700,
		},
		MockDGXH200: {
			name: MockDGXH200, gpuName: "NVIDIA H200", layout: dgxH100Layout,
			newServer: func(n int) *server.Server { return dgxh200.NewWithGPUs(gpus.Multiple(n, gpus.H200_SXM5_141GB)...) },
			nvlinks:   18, pcieGen: 5, pcieWidth: 16, powerW: 700,
		},
		MockDGXB200: {
			name: MockDGXB200, gpuName: "NVIDIA B200", layout: dgxB200Layout,
			newServer: func(n int) *server.Server { return dgxb200.NewWithGPUs(gpus.Multiple(n, gpus.B200_SXM5_180GB)...) },
			nvlinks:   18, pcieGen: 5, pcieWidth: 16, powerW: 1000,
		},
		MockL40SPCIe: {
			name: MockL40SPCIe, gpuName: "NVIDIA L40S", layout: l40sLayout,
			newServer: func(n int) *server.Server { return newServer(n, l40sConfig()) },
			pcieGen:   4, pcieWidth: 16, powerW: 350, noMIG: true,
		},
		MockGH200: {
			name: MockGH200, gpuName: "NVIDIA GH200 480GB", layout: gh200Layout,
			newServer: func(n int) *server.Server { return newServer(n, gh200Config()) },
		},
		// 18 NVLink5 links per GPU: the GB200 tray's `nvidia-smi nvlink -s`
		// (Link 0-17) and `topo -m` (NV18) in NVIDIA/k8s-test-infra#371;
		// the GB300 tray's count is modelled on it. PCIe and power are not
		// claimed, as on GH200.
		MockGB200Tray: {
			name: MockGB200Tray, gpuName: "NVIDIA GB200", layout: nvl72TrayLayout,
			newServer: func(n int) *server.Server { return newServer(n, gb200Config()) },
			nvlinks:   18, fabric: rackFabric(), vbios: "97.00.0B.00.2F",
		},
		MockGB300Tray: {
			name: MockGB300Tray, gpuName: "NVIDIA GB300", layout: nvl72TrayLayout,
			newServer: func(n int) *server.Server { return newServer(n, gb300Config()) },
			nvlinks:   18, fabric: rackFabric(),
		},
	}
}

// dgxA100Layout is gpuform's modules/dgx-a100 profile: GPU bus ids 07, 0F,
// 47, 4E, 87, 90, B7, BD; NPS4 NUMA nodes 3, 1, 7, 5 for the GPU pairs; two
// GPUs and two compute HCAs (mlx5_0/1, 2/3, 6/7, 8/9) per PCIe switch at
// PXB; CPUs per node as its `nvidia-smi topo -m`. The module's header cites
// the public sources (DGX A100 user guide, NVIDIA/deepops, NVIDIA/nccl#1505,
// rapidsai/dask-cuda#1358).
func dgxA100Layout() MockLayout {
	l := MockLayout{SameSwitch: LevelPXB, CPUs: map[int]string{}}
	for n := 0; n < 8; n++ {
		// EPYC 7742 NPS4: node n holds cores 16n..16n+15 and their SMT siblings.
		l.CPUs[n] = fmt.Sprintf("%d-%d,%d-%d", 16*n, 16*n+15, 128+16*n, 128+16*n+15)
	}
	gpu := func(bus string, numa int, sw string) MockDevice {
		return MockDevice{BusID: "0000:" + bus + ":00.0", NUMA: numa, Switch: sw}
	}
	nic := func(name, bus string, numa int, sw string) MockDevice {
		return MockDevice{Name: name, BusID: "0000:" + bus + ":00.0", NUMA: numa, Switch: sw}
	}
	l.GPUs = []MockDevice{gpu("07", 3, "sw0"), gpu("0f", 3, "sw0"), gpu("47", 1, "sw1"), gpu("4e", 1, "sw1"),
		gpu("87", 7, "sw2"), gpu("90", 7, "sw2"), gpu("b7", 5, "sw3"), gpu("bd", 5, "sw3")}
	l.NICs = []MockDevice{nic("mlx5_0", "0c", 3, "sw0"), nic("mlx5_1", "12", 3, "sw0"), nic("mlx5_2", "4b", 1, "sw1"), nic("mlx5_3", "54", 1, "sw1"),
		nic("mlx5_6", "8d", 7, "sw2"), nic("mlx5_7", "94", 7, "sw2"), nic("mlx5_8", "ba", 5, "sw3"), nic("mlx5_9", "cc", 5, "sw3")}
	return l
}

// dgxH100Layout is gpuform's modules/hgx-h100-8gpu profile (the DGX H100 and
// DGX H200 share the board): GPU bus ids 1B, 43, 52, 61, 9D, C3, D1, DF,
// GPUs 0-3 on NUMA 0 (CPUs 0-55,112-167) and 4-7 on NUMA 1 (56-111,168-223),
// one PCIe switch per GPU holding its compute HCA at PXB (mlx5_0, 3, 4, 5,
// 6, 9, 10, 11 at buses 18, 40, 4F, 5E, 9A, C0, CE, DC). Sources in the
// module's header: DGX H100/H200 user guide, DGX BasePOD guides, NVIDIA's
// MLPerf system notes.
func dgxH100Layout() MockLayout {
	l := MockLayout{SameSwitch: LevelPXB, CPUs: map[int]string{0: "0-55,112-167", 1: "56-111,168-223"}}
	gpus := []string{"1b", "43", "52", "61", "9d", "c3", "d1", "df"}
	nics := []struct{ name, bus string }{{"mlx5_0", "18"}, {"mlx5_3", "40"}, {"mlx5_4", "4f"}, {"mlx5_5", "5e"},
		{"mlx5_6", "9a"}, {"mlx5_9", "c0"}, {"mlx5_10", "ce"}, {"mlx5_11", "dc"}}
	for i := range gpus {
		sw := fmt.Sprintf("sw%d", i)
		l.GPUs = append(l.GPUs, MockDevice{BusID: "0000:" + gpus[i] + ":00.0", NUMA: i / 4, Switch: sw})
		l.NICs = append(l.NICs, MockDevice{Name: nics[i].name, BusID: "0000:" + nics[i].bus + ":00.0", NUMA: i / 4, Switch: sw})
	}
	return l
}

// dgxB200Layout has no gpuform module behind it: the GPU bus ids 8F, 90, 96,
// 97, C4, C5, CB, CC are those a real 8x B200 node (GCP A4) printed in the
// nccl-tests fixture all_gather_perf-16xB200-2node-gcp-a4-roce.txt; the
// NUMA split, CPU numbering, NIC names/addresses and switch grouping are
// modelled (one HCA per GPU switch, as on the H100 board), not measured.
func dgxB200Layout() MockLayout {
	l := MockLayout{SameSwitch: LevelPXB, CPUs: map[int]string{0: "0-63", 1: "64-127"}}
	for i, bus := range []string{"8f", "90", "96", "97", "c4", "c5", "cb", "cc"} {
		b, _ := strconv.ParseUint(bus, 16, 8)
		sw := fmt.Sprintf("sw%d", i)
		l.GPUs = append(l.GPUs, MockDevice{BusID: "0000:" + bus + ":00.0", NUMA: i / 4, Switch: sw})
		l.NICs = append(l.NICs, MockDevice{Name: fmt.Sprintf("mlx5_%d", i), BusID: fmt.Sprintf("0000:%02x:00.0", b-3), NUMA: i / 4, Switch: sw})
	}
	return l
}

// l40sLayout is gpuform's modules/l40s-8gpu-pcie profile (ASUS ESC8000A-E12
// class, 2x EPYC 9004): every GPU on its own CPU root port (no PCIe switch,
// so GPU–NIC is NODE or SYS), two dual-port ConnectX-7 at 21:00.0/.1 (NUMA
// 0) and 81:00.0/.1 (NUMA 1), CPUs 0-31 and 32-63. GPU addresses 01, 41, C1
// and E1 are from the public lspci dump the module cites; the four slots it
// left empty are modelled as the simulated l40s-rocky9 node's sysfs models
// them (25, 65, 85, A5 on each root complex's port 05.1,
// provision/sim/roots/hw/l40s-8gpu.txtar), so NVML, nvidia-smi and sysfs
// name the same GPUs; none shares a NIC's bus (21, 81). The levels of the four real slots match
// that host's own `nvidia-smi topo -m` (smi's TestMockL40SMatchesCapture).
func l40sLayout() MockLayout {
	l := MockLayout{SameSwitch: LevelPIX, CPUs: map[int]string{0: "0-31", 1: "32-63"}}
	for i, bus := range []string{"01", "25", "41", "65", "85", "a5", "c1", "e1"} {
		l.GPUs = append(l.GPUs, MockDevice{BusID: "0000:" + bus + ":00.0", NUMA: i / 4})
	}
	l.NICs = []MockDevice{
		{Name: "mlx5_0", BusID: "0000:21:00.0", NUMA: 0}, {Name: "mlx5_1", BusID: "0000:21:00.1", NUMA: 0},
		{Name: "mlx5_2", BusID: "0000:81:00.0", NUMA: 1}, {Name: "mlx5_3", BusID: "0000:81:00.1", NUMA: 1},
	}
	return l
}

// gh200Layout is gpuform's modules/gh200 profile: one GH200 at
// 0009:01:00.0 whose CPU affinity is NUMA node 0 (the Grace CPU, 72 cores);
// the GPU's own memory and MIG nodes are nodes 1-8. NICs differ between
// GH200 servers, so none is simulated.
func gh200Layout() MockLayout {
	return MockLayout{
		SameSwitch: LevelPIX,
		CPUs:       map[int]string{0: "0-71"},
		GPUs:       []MockDevice{{BusID: "0009:01:00.0", NUMA: 0}},
	}
}

// The GB200 tray's VBIOS version "97.00.0B.00.2F" is modelled: it has
// nvidia-smi's "VBIOS Version" form (NN.NN.NN.NN.NN), no public GB200
// capture of it was found.

// rackFabric is a healthy rack's registration: state Completed, status
// Success, the clique id 4026 and cluster UUID
// 9c6f5af3-53bf-49b5-a436-b66766c413c3 a real GB200 tray reported
// (leptonai/gpud#1106). Every simulated tray shares them, as the trays
// of one rack do.
func rackFabric() *nvml.GpuFabricInfo {
	return &nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(nvml.SUCCESS), CliqueId: 4026,
		ClusterUuid: [16]uint8{0x9c, 0x6f, 0x5a, 0xf3, 0x53, 0xbf, 0x49, 0xb5, 0xa4, 0x36, 0xb6, 0x67, 0x66, 0xc4, 0x13, 0xc3}}
}

// nvl72TrayLayout is gpuform's modules/gb200-nvl72-tray profile: GPUs 0-1
// on Grace 0 (CPUs 0-71, NUMA 0), GPUs 2-3 on Grace 1 (72-143, NUMA 1), as
// a GB200 tray's `nvidia-smi topo -m` shows (NVIDIA/k8s-test-infra#371),
// and every NIC SYS from every GPU (sgl-project/sglang#11208). The PCI
// addresses (GPUs in domains 0008, 0009, 0018, 0019; the four compute
// ConnectX NICs in 0000, 0002, 0010, 0012) are modelled, as are the NICs'
// NUMA nodes; they match the simulated trays' sysfs
// (provision/sim/roots/hw/gb200-nvl72-tray.txtar).
func nvl72TrayLayout() MockLayout {
	l := MockLayout{SameSwitch: LevelPIX, C2CGPUs: true, CPUs: map[int]string{0: "0-71", 1: "72-143"}}
	for i, dom := range []string{"0008", "0009", "0018", "0019"} {
		l.GPUs = append(l.GPUs, MockDevice{BusID: dom + ":01:00.0", NUMA: i / 2})
	}
	for i, dom := range []string{"0000", "0002", "0010", "0012"} {
		l.NICs = append(l.NICs, MockDevice{Name: fmt.Sprintf("mlx5_%d", i), BusID: dom + ":03:00.0", NUMA: i / 2})
	}
	return l
}

func newServer(n int, cfg gpus.Config) *server.Server {
	s, _ := server.New(
		server.WithGPUs(gpus.Multiple(n, cfg)...),
		server.WithDriverVersion("550.54.15"),
		server.WithNVMLVersion("12.550.54.15"),
		server.WithCUDADriverVersion(12040),
	)
	return s
}

// l40sConfig is the L40S. go-nvml ships no L40S config; the PCI device id
// 0x26B9 is the L40S entry of the PCI ID repository
// (https://pci-ids.ucw.cz/read/PC/10de/26b9), compute capability 8.9 and 48
// GB GDDR6 are from kb/data/gpu-models.tsv.
func l40sConfig() gpus.Config {
	return gpus.Config{
		Name: "NVIDIA L40S", Architecture: nvml.DEVICE_ARCH_ADA, Brand: nvml.BRAND_NVIDIA,
		MemoryMB: 46068, CudaMajor: 8, CudaMinor: 9, PciDeviceId: 0x26B910DE,
	}
}

// gh200Config is the GH200's GPU: Hopper, compute capability 9.0
// (gpu-models.tsv), 97871 MiB as nvidia-smi shows it on GH200 480GB nodes
// (modules/gh200 [SMI]). No PCI device id is claimed.
func gh200Config() gpus.Config {
	return gpus.Config{
		Name: "NVIDIA GH200 480GB", Architecture: nvml.DEVICE_ARCH_HOPPER, Brand: nvml.BRAND_NVIDIA,
		MemoryMB: 97871, CudaMajor: 9, CudaMinor: 0,
	}
}

// gb200Config is the GB200 tray's GPU: Blackwell, compute capability 10.0
// (gpu-models.tsv), named "NVIDIA GB200" as nvidia-smi names it
// (NVIDIA/k8s-test-infra#371). Its memory (189471 MiB, about the 186 GB
// MLPerf systems report) is modelled; no PCI device id is claimed.
func gb200Config() gpus.Config {
	return gpus.Config{
		Name: "NVIDIA GB200", Architecture: nvml.DEVICE_ARCH_BLACKWELL, Brand: nvml.BRAND_NVIDIA,
		MemoryMB: 189471, CudaMajor: 10, CudaMinor: 0,
	}
}

// gb300Config is the GB300 tray's GPU: Blackwell, compute capability 10.3
// (gpu-models.tsv). The name "NVIDIA GB300" and its memory (about the
// 288 GB third parties list, gpu-models.tsv) are modelled.
func gb300Config() gpus.Config {
	return gpus.Config{
		Name: "NVIDIA GB300", Architecture: nvml.DEVICE_ARCH_BLACKWELL, Brand: nvml.BRAND_NVIDIA,
		MemoryMB: 284208, CudaMajor: 10, CudaMinor: 3,
	}
}

// MockSystem is a simulated node: an nvml.Interface built on go-nvml's
// mock server with every function Collect calls filled in, plus the PCI
// topology of its NICs.
type MockSystem struct {
	*server.Server
	model  mockModel
	layout MockLayout
	faults []Fault
	sysNIC map[int]bool
	procs  []SimProcess
}

// SetProcesses makes the simulated GPUs report ps as their compute
// processes (a replay: go-nvml's mock runs none).
func (s *MockSystem) SetProcesses(ps []SimProcess) { s.procs = ps }

// NewMock builds the named simulated system with its built-in layout and
// the given faults planted.
func NewMock(name string, faults ...Fault) (*MockSystem, error) {
	m, ok := mockModels()[name]
	if !ok {
		return nil, fmt.Errorf("unknown NVML mock %q (known: %s)", name, strings.Join(MockNames(), ", "))
	}
	return NewMockLayout(name, m.layout(), faults...)
}

// NewMockLayout builds the named simulated system (its GPU model, driver,
// NVLink and PCIe) with another PCI/NUMA layout, e.g. the hardware a spec
// declares for a simulated node.
func NewMockLayout(name string, layout MockLayout, faults ...Fault) (*MockSystem, error) {
	m, ok := mockModels()[name]
	if !ok {
		return nil, fmt.Errorf("unknown NVML mock %q (known: %s)", name, strings.Join(MockNames(), ", "))
	}
	n := len(layout.GPUs)
	if n == 0 {
		return nil, fmt.Errorf("NVML mock %s: the layout has no GPUs", name)
	}
	for _, d := range append(append([]MockDevice(nil), layout.GPUs...), layout.NICs...) {
		if _, err := NormalizeBusID(d.BusID); err != nil {
			return nil, fmt.Errorf("NVML mock %s: %w", name, err)
		}
	}
	faults = append([]Fault(nil), faults...)
	for k, f := range faults {
		if f.BusID == "" {
			continue
		}
		// A fault that names its GPU by PCI address lands on the GPU of
		// the layout at that address, whatever its index.
		faults[k].GPU = -1
		for i, g := range layout.GPUs {
			if b, _ := NormalizeBusID(g.BusID); b == f.BusID {
				faults[k].GPU = i
			}
		}
		if faults[k].GPU < 0 {
			return nil, fmt.Errorf("fault %s: no GPU at %s on %s", f.Kind, f.BusID, name)
		}
	}
	s := &MockSystem{Server: m.newServer(n), model: m, layout: layout, faults: faults, sysNIC: map[int]bool{}}
	for _, f := range faults {
		if f.GPU < 0 || f.GPU >= n {
			return nil, fmt.Errorf("fault %s: GPU %d does not exist on %s (%d GPUs)", f.Kind, f.GPU, name, n)
		}
		if f.Kind == FaultNICAcrossSYS {
			s.sysNIC[f.GPU] = true
		}
	}
	events := &xidQueue{}
	for i, d := range s.Devices {
		s.wire(i, d.(*server.Device), events)
	}
	s.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return events.set(), nvml.SUCCESS }
	// A dropped GPU vanishes from enumeration like one that fell off the
	// bus; dropping happens last so the remaining devices keep their wiring
	// (and their PCI addresses), highest index first so the indexes of
	// those still to drop stay valid.
	var drop []int
	for _, f := range faults {
		if f.Kind == FaultDropGPU && !slices.Contains(drop, f.GPU) {
			drop = append(drop, f.GPU)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(drop)))
	for _, idx := range drop {
		s.Devices = append(s.Devices[:idx:idx], s.Devices[idx+1:]...)
	}
	return s, nil
}

// Name is the simulated system's name, e.g. "dgxh100".
func (s *MockSystem) Name() string { return s.model.name }

// NICs lists the simulated NICs.
func (s *MockSystem) NICs() []NIC {
	var out []NIC
	for _, n := range s.layout.NICs {
		out = append(out, NIC{Name: n.Name, BusID: n.BusID})
	}
	return out
}

// PairedNICs maps each GPU index to its nearest NIC (same PCIe switch,
// else same NUMA node) and the level between them: what a spec's gpu_nic
// pairing for this layout says.
func (s *MockSystem) PairedNICs() map[int]NICPair {
	out := map[int]NICPair{}
	for i, g := range s.layout.GPUs {
		for _, pass := range []func(MockDevice) bool{
			func(n MockDevice) bool { return g.Switch != "" && n.Switch == g.Switch },
			func(n MockDevice) bool { return n.NUMA == g.NUMA },
		} {
			if _, done := out[i]; done {
				break
			}
			for _, n := range s.layout.NICs {
				if pass(n) {
					out[i] = NICPair{GPU: i, NIC: n.Name, NICBusID: n.BusID, Level: s.level(g, n)}
					break
				}
			}
		}
	}
	return out
}

func (s *MockSystem) has(i int, k FaultKind) (Fault, bool) {
	for _, f := range s.faults {
		if f.GPU == i && f.Kind == k {
			return f, true
		}
	}
	return Fault{}, false
}

// CommonAncestor answers topology from the layout: same switch →
// layout.SameSwitch, same NUMA node → NODE, else SYS. A GPU with the
// nic_sys fault reaches every NIC through SYS.
func (s *MockSystem) CommonAncestor(a, b string) (Level, error) {
	da, ga, err := s.find(a)
	if err != nil {
		return "", err
	}
	db, gb, err := s.find(b)
	if err != nil {
		return "", err
	}
	if (ga >= 0 && gb < 0 && s.sysNIC[ga]) || (gb >= 0 && ga < 0 && s.sysNIC[gb]) {
		return LevelSys, nil
	}
	if s.layout.C2CGPUs && (ga >= 0) != (gb >= 0) {
		return LevelSys, nil
	}
	return s.level(da, db), nil
}

func (s *MockSystem) level(a, b MockDevice) Level {
	switch {
	case a.Switch != "" && a.Switch == b.Switch:
		return s.layout.SameSwitch
	case a.NUMA == b.NUMA:
		return LevelNode
	}
	return LevelSys
}

// find returns the device at a PCI address and its GPU index (-1 for a NIC).
func (s *MockSystem) find(addr string) (MockDevice, int, error) {
	a, err := NormalizeBusID(addr)
	if err != nil {
		return MockDevice{}, -1, err
	}
	for i, g := range s.layout.GPUs {
		if b, _ := NormalizeBusID(g.BusID); b == a {
			return g, i, nil
		}
	}
	for _, n := range s.layout.NICs {
		if b, _ := NormalizeBusID(n.BusID); b == a {
			return n, -1, nil
		}
	}
	return MockDevice{}, -1, fmt.Errorf("no simulated PCI device at %s", addr)
}

// nvmlBusID renders a layout address the way NVML prints it: 8-digit
// domain, upper case ("00000000:1B:00.0").
func nvmlBusID(addr string) string {
	a, _ := NormalizeBusID(addr)
	dom, rest, _ := strings.Cut(a, ":")
	d, _ := strconv.ParseUint(dom, 16, 32)
	return fmt.Sprintf("%08X:%s", d, strings.ToUpper(rest))
}

func (s *MockSystem) wire(i int, d *server.Device, events *xidQueue) {
	m := s.model
	g := s.layout.GPUs[i]
	busID := nvmlBusID(g.BusID)
	// go-nvml draws a random UUID per construction; a fixed one keeps
	// reports and golden files stable.
	d.UUID = fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", crc(m.name), i)
	d.PciBusID = busID
	d.GetNameFunc = func() (string, nvml.Return) { return m.gpuName, nvml.SUCCESS }
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		out := []nvml.ProcessInfo{}
		for _, p := range s.procs {
			if p.GPU == i && p.PID > 0 {
				out = append(out, nvml.ProcessInfo{Pid: uint32(p.PID), UsedGpuMemory: p.UsedMemoryMiB << 20})
			}
		}
		return out, nvml.SUCCESS
	}
	// A 13-digit board serial as real boards print it (the A100 fixture's
	// 1650522003820), numbered per GPU: simulated, not any real board's.
	d.GetSerialFunc = func() (string, nvml.Return) { return fmt.Sprintf("16505220%05d", i), nvml.SUCCESS }
	d.GetVbiosVersionFunc = func() (string, nvml.Return) {
		if m.vbios == "" {
			return "", nvml.ERROR_NOT_SUPPORTED
		}
		return m.vbios, nvml.SUCCESS
	}
	d.GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) {
		if m.fabric == nil {
			return nvml.GpuFabricInfo{}, nvml.ERROR_NOT_SUPPORTED
		}
		if _, down := s.has(i, FaultFabricNotStarted); down {
			return nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_NOT_STARTED, Status: uint32(nvml.ERROR_UNKNOWN)}, nvml.SUCCESS
		}
		return *m.fabric, nvml.SUCCESS
	}
	d.GetVirtualizationModeFunc = func() (nvml.GpuVirtualizationMode, nvml.Return) {
		return nvml.GPU_VIRTUALIZATION_MODE_NONE, nvml.SUCCESS
	}
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		p := nvml.PciInfo{PciDeviceId: d.Config.PciDeviceId}
		putCString(p.BusId[:], busID)
		return p, nvml.SUCCESS
	}
	numa := g.NUMA
	if _, bad := s.has(i, FaultWrongNUMA); bad {
		numa = s.otherNUMA(numa)
	}
	cpus, _ := cpulist.Parse(s.layout.CPUs[numa])
	d.GetMemoryAffinityFunc = func(nodes int, _ nvml.AffinityScope) ([]uint, nvml.Return) {
		set := make([]uint, (nodes+63)/64)
		if numa/64 < len(set) {
			set[numa/64] |= 1 << uint(numa%64)
		}
		return set, nvml.SUCCESS
	}
	// x86 drivers answer NOT_SUPPORTED here. Coherent platforms answer the
	// GPU memory's own node, which no public GH200 output pins down, so the
	// mock does not claim one there either.
	d.GetNumaNodeIdFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetCpuAffinityFunc = func(n int) ([]uint, nvml.Return) {
		set := make([]uint, (n+63)/64)
		for _, c := range cpus {
			if c/64 < len(set) {
				set[c/64] |= 1 << uint(c%64)
			}
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
	_, idle := s.has(i, FaultPCIeIdle)
	if idle && m.pcieGen > 0 {
		// An idle GPU's link runs at Gen1 (2.5 GT/s) until work arrives;
		// the negotiated maximum stays.
		gen = 1
	}
	pcie := func(v int) (int, nvml.Return) {
		if m.pcieGen == 0 {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		return v, nvml.SUCCESS
	}
	d.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return pcie(gen) }
	d.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return pcie(maxGen) }
	d.GetGpuMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return pcie(m.pcieGen) }
	d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return pcie(width) }
	d.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return pcie(m.pcieWidth) }
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
	replays, linkErrors := s.has(i, FaultNVLinkErrors)
	if replays.Value == 0 {
		replays.Value = 100
	}
	d.GetNvLinkErrorCounterFunc = func(l int, counter nvml.NvLinkErrorCounter) (uint64, nvml.Return) {
		switch {
		case l < 0 || l >= m.nvlinks || counter < 0 || counter >= nvml.NVLINK_ERROR_COUNT:
			return 0, nvml.ERROR_INVALID_ARGUMENT
		case linkErrors && l == 0 && counter == nvml.NVLINK_ERROR_DL_REPLAY:
			return replays.Value, nvml.SUCCESS
		}
		return 0, nvml.SUCCESS
	}
	d.GetNvLinkRemotePciInfoFunc = func(l int) (nvml.PciInfo, nvml.Return) {
		var p nvml.PciInfo
		if l < 0 || l >= m.nvlinks {
			return p, nvml.ERROR_INVALID_ARGUMENT
		}
		// Links spread over the NVSwitches round-robin; the switch
		// addresses are modelled, not taken from a real system.
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
		lvl, err := s.CommonAncestor(busID, o.PciBusID)
		if err != nil {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
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
	if idle {
		mask |= 0x1 // nvmlClocksEventReasonGpuIdle
	}
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return temp, nvml.SUCCESS }
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) {
		if m.powerW == 0 {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		return uint32(m.powerW * 1000), nvml.SUCCESS
	}
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

// otherNUMA picks the node a misplaced GPU reports: the first node of the
// layout that is not n (or n+1 when the layout lists only one).
func (s *MockSystem) otherNUMA(n int) int {
	nodes := make([]int, 0, len(s.layout.CPUs))
	for k := range s.layout.CPUs {
		nodes = append(nodes, k)
	}
	sort.Ints(nodes)
	for _, k := range nodes {
		if k != n {
			return k
		}
	}
	return n + 1
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
