//go:build cgo

package nvmlfacts

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestCollectMocks(t *testing.T) {
	tests := []struct {
		mock      string
		gpus      int
		nics      int
		name      string
		links     int
		pcieGen   int
		powerW    float64
		migKnown  bool
		nicLevel0 Level // gpu0 to the first NIC
		cpus0     string
	}{
		{MockDGXA100, 8, 8, "NVIDIA A100-SXM4-40GB", 12, 4, 400, true, LevelPXB, "48-63,176-191"},
		{MockDGXH100, 8, 8, "NVIDIA H100 80GB HBM3", 18, 5, 700, true, LevelPXB, "0-55,112-167"},
		{MockDGXH200, 8, 8, "NVIDIA H200", 18, 5, 700, true, LevelPXB, "0-55,112-167"},
		{MockDGXB200, 8, 8, "NVIDIA B200", 18, 5, 1000, true, LevelPXB, "0-63"},
		{MockL40SPCIe, 8, 4, "NVIDIA L40S", 0, 4, 350, false, LevelNode, "0-31"},
		{MockGH200, 1, 0, "NVIDIA GH200 480GB", 0, 0, 0, true, "", "0-71"},
	}
	for _, tt := range tests {
		t.Run(tt.mock, func(t *testing.T) {
			m, err := NewMock(tt.mock)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Collect(context.Background(), m, Options{NICs: m.NICs(), Topology: m})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Warnings) != 0 {
				t.Errorf("warnings: %v", rep.Warnings)
			}
			if len(rep.GPUs) != tt.gpus {
				t.Fatalf("got %d GPUs, want %d", len(rep.GPUs), tt.gpus)
			}
			for _, g := range rep.GPUs {
				if g.Name != tt.name || g.BusID == "" || g.UUID == "" {
					t.Errorf("gpu%d identity: %q %q %q", g.Index, g.Name, g.BusID, g.UUID)
				}
				if len(g.NVLinks) != tt.links {
					t.Errorf("gpu%d: %d NVLinks, want %d", g.Index, len(g.NVLinks), tt.links)
				}
				if tt.pcieGen == 0 {
					// NOT_SUPPORTED must leave the fact absent.
					if g.PCIe != nil || g.PowerLimitW != nil {
						t.Errorf("gpu%d: unsupported facts reported: %+v %v", g.Index, g.PCIe, g.PowerLimitW)
					}
				} else {
					if g.PCIe == nil || g.PCIe.CurrentGen != tt.pcieGen || g.PCIe.CurrentWidth != 16 {
						t.Errorf("gpu%d PCIe: %+v", g.Index, g.PCIe)
					}
					if g.PowerLimitW == nil || *g.PowerLimitW != tt.powerW {
						t.Errorf("gpu%d power limit: %v", g.Index, g.PowerLimitW)
					}
				}
				if (g.MIG != nil) != tt.migKnown {
					t.Errorf("gpu%d MIG: %+v", g.Index, g.MIG)
				}
				if g.NUMANode == nil || g.ECC == nil || g.RemappedRows == nil || g.RetiredPages != nil || g.Throttle == nil {
					t.Errorf("gpu%d: missing facts %+v", g.Index, g)
				}
			}
			if got, want := len(rep.GPUTopology), tt.gpus*(tt.gpus-1)/2; got != want {
				t.Errorf("%d GPU pairs, want %d", got, want)
			}
			if got, want := len(rep.NICTopology), tt.gpus*tt.nics; got != want {
				t.Errorf("%d NIC pairs, want %d", got, want)
			}
			if tt.nics > 0 && rep.NICTopology[0].Level != tt.nicLevel0 {
				t.Errorf("gpu0 to %s level %s, want %s", rep.NICTopology[0].NIC, rep.NICTopology[0].Level, tt.nicLevel0)
			}
			if rep.GPUs[0].CPUAffinity != tt.cpus0 {
				t.Errorf("gpu0 CPUs %q, want %q", rep.GPUs[0].CPUAffinity, tt.cpus0)
			}
		})
	}
}

// TestInitFailure uses a bare moq mock whose only function is Init: any
// other call would panic, which proves nothing runs after a failed Init.
func TestInitFailure(t *testing.T) {
	for _, ret := range []nvml.Return{nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED, nvml.ERROR_UNKNOWN} {
		t.Run(ret.String(), func(t *testing.T) {
			lib := &mock.Interface{InitFunc: func() nvml.Return { return ret }}
			_, err := Collect(context.Background(), lib, Options{})
			var ie *InitError
			if !errors.As(err, &ie) || ie.Ret != ret {
				t.Fatalf("got %v, want InitError(%v)", err, ret)
			}
			if ret == nvml.ERROR_LIBRARY_NOT_FOUND && !bytes.Contains([]byte(err.Error()), []byte("libnvidia-ml.so.1")) {
				t.Errorf("message does not name the library: %v", err)
			}
		})
	}
}

func TestXIDWindow(t *testing.T) {
	m, err := NewMock(MockDGXH100, Fault{Kind: FaultXID, GPU: 5, Value: 79})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Collect(context.Background(), m, Options{XIDWindow: 30 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := &XIDWatch{WindowMS: 30, Events: []XIDEvent{{GPU: 5, XID: 79}}}
	if diff := cmp.Diff(want, rep.XID); diff != "" {
		t.Errorf("XID (-want +got):\n%s", diff)
	}
	// A window that has passed before the first wait (a descheduled
	// process, a loaded CI machine) still reads the events queued in it.
	fresh, err := NewMock(MockDGXH100, Fault{Kind: FaultXID, GPU: 5, Value: 79})
	if err != nil {
		t.Fatal(err)
	}
	rep, err = Collect(context.Background(), fresh, Options{XIDWindow: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.XID == nil || len(rep.XID.Events) != 1 || rep.XID.Events[0].XID != 79 {
		t.Errorf("a window shorter than the scheduler's delay lost the queued Xid: %+v", rep.XID)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Collect(ctx, m, Options{XIDWindow: time.Hour}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled collect: %v", err)
	}
}

func TestDropGPU(t *testing.T) {
	m, err := NewMock(MockDGXB200, Fault{Kind: FaultDropGPU, GPU: 7})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Collect(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.GPUs) != 7 {
		t.Errorf("%d GPUs after dropping one of 8", len(rep.GPUs))
	}
}

// TestBusAddressedFaults: faults that name their GPU by PCI address land
// on the GPU at that address, and a dropped GPU takes its address with it:
// the GPUs after it are renumbered, as NVML renumbers them, but keep their
// own addresses. An idle GPU's link reads Gen1 with the idle reason set.
func TestBusAddressedFaults(t *testing.T) {
	var faults []Fault
	for _, s := range []string{"drop_gpu@0000:9d:00.0", "pcie_x8@0000:c3:00.0", "pcie_idle@0000:61:00.0"} {
		f, err := ParseFault(s)
		if err != nil {
			t.Fatal(err)
		}
		faults = append(faults, f)
	}
	m, err := NewMock(MockDGXH100, faults...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Collect(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buses []string
	for _, g := range rep.GPUs {
		b, err := NormalizeBusID(g.BusID)
		if err != nil {
			t.Fatal(err)
		}
		buses = append(buses, b)
	}
	want := []string{"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"}
	if diff := cmp.Diff(want, buses); diff != "" {
		t.Errorf("bus ids after dropping 9d (-want +got):\n%s", diff)
	}
	for _, g := range rep.GPUs {
		p := g.PCIe
		b, _ := NormalizeBusID(g.BusID)
		switch b {
		case "0000:c3:00.0":
			if p.CurrentWidth != 8 || p.CurrentGen != 5 || g.Index != 4 {
				t.Errorf("c3 (NVML index %d): Gen%d x%d, want index 4 at Gen5 x8", g.Index, p.CurrentGen, p.CurrentWidth)
			}
		case "0000:61:00.0":
			if p.CurrentGen != 1 || p.MaxGen != 5 || p.CurrentWidth != 16 || g.Throttle == nil || g.Throttle.Mask&0x1 == 0 {
				t.Errorf("61: Gen%d (max %d) x%d throttle %+v, want idle at Gen1 of 5, x16", p.CurrentGen, p.MaxGen, p.CurrentWidth, g.Throttle)
			}
		default:
			if p.CurrentWidth != 16 || p.CurrentGen != 5 {
				t.Errorf("%s: Gen%d x%d, want Gen5 x16", g.BusID, p.CurrentGen, p.CurrentWidth)
			}
		}
	}
	if _, err := NewMock(MockDGXH100, Fault{Kind: FaultPCIeX8, GPU: -1, BusID: "0000:aa:00.0"}); err == nil {
		t.Error("a fault at an address with no GPU was accepted")
	}
}

func TestRunAgentGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := RunAgent(context.Background(), &buf, AgentOptions{Mock: MockDGXH100}); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "agent-dgxh100.json")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("agent output (-golden +got):\n%s", diff)
	}
	rep, err := Decode(buf.Bytes())
	if err != nil || rep.Source != SourceMock || rep.Mock != MockDGXH100 {
		t.Errorf("decode: %v %+v", err, rep)
	}
	if err := RunAgent(context.Background(), &buf, AgentOptions{Mock: "dgx-nope"}); err == nil {
		t.Error("unknown mock accepted")
	}
}

func TestCPUList(t *testing.T) {
	tests := map[string]struct {
		words []uint
		want  string
	}{
		"empty":      {nil, ""},
		"one":        {[]uint{1}, "0"},
		"range":      {[]uint{0xff}, "0-7"},
		"two words":  {[]uint{1<<63 | 1, 1}, "0,63-64"},
		"split node": {[]uint{0xf, 0, 0xf}, "0-3,128-131"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := cpuList(tt.words); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMockLayout simulates a spec's own hardware on the H100 model.
func TestMockLayout(t *testing.T) {
	layout := MockLayout{
		SameSwitch: LevelPIX,
		CPUs:       map[int]string{0: "0-3", 1: "4-7"},
		GPUs:       []MockDevice{{BusID: "0000:10:00.0", NUMA: 0, Switch: "a"}, {BusID: "0000:90:00.0", NUMA: 1, Switch: "b"}},
		NICs:       []MockDevice{{Name: "ib0", BusID: "0000:11:00.0", NUMA: 0, Switch: "a"}},
	}
	m, err := NewMockLayout(MockDGXH100, layout)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Collect(context.Background(), m, Options{NICs: m.NICs(), Topology: m})
	if err != nil {
		t.Fatal(err)
	}
	want := []NICPair{{GPU: 0, NIC: "ib0", NICBusID: "0000:11:00.0", Level: LevelPIX}, {GPU: 1, NIC: "ib0", NICBusID: "0000:11:00.0", Level: LevelSys}}
	if len(rep.GPUs) != 2 || rep.GPUs[1].BusID != "00000000:90:00.0" || rep.GPUs[1].CPUAffinity != "4-7" || !cmp.Equal(rep.NICTopology, want) {
		t.Errorf("report: %+v", rep)
	}
	if _, err := NewMockLayout(MockDGXH100, MockLayout{}); err == nil {
		t.Error("empty layout accepted")
	}
	if _, err := NewMockLayout(MockDGXH100, MockLayout{GPUs: []MockDevice{{BusID: "nope"}}}); err == nil {
		t.Error("bad address accepted")
	}
}

func TestParseFault(t *testing.T) {
	if f, err := ParseFault("nvlink_down:3"); err != nil || f != (Fault{Kind: FaultNVLinkDown, GPU: 3}) {
		t.Errorf("got %+v %v", f, err)
	}
	if f, err := ParseFault("xid:2:79"); err != nil || f.Value != 79 {
		t.Errorf("got %+v %v", f, err)
	}
	for _, bad := range []string{"", "nvlink_down", "melt:1", "ecc_off:x", "xid:1", "a:1:2:3"} {
		if _, err := ParseFault(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := NewMock(MockDGXA100, Fault{Kind: FaultECCOff, GPU: 9}); err == nil {
		t.Error("fault on a GPU that does not exist accepted")
	}
}

func TestMockDriverVersionOverride(t *testing.T) {
	rep, err := CollectAgent(context.Background(), AgentOptions{Mock: MockDGXH100, DriverVersion: "535.183.06"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.DriverVersion != "535.183.06" {
		t.Errorf("driver version = %q", rep.DriverVersion)
	}
}

// TestNUMANodeAmbiguous: when the platform does not say which NUMA node a
// GPU is near (sysfs numa_node -1 in a VM, or NPS settings that make it
// equidistant), NVML's memory affinity spans several nodes. Taking the
// first of them would be a confident wrong fact: a spec binding the GPU to
// node 0 would pass and one binding it to node 1 would fail.
func TestNUMANodeAmbiguous(t *testing.T) {
	tests := []struct {
		name string
		mask []uint
		want *int
	}{
		{"one node", []uint{1 << 1}, ptr(1)},
		{"node 64", []uint{0, 1}, ptr(64)},
		{"two nodes", []uint{1<<0 | 1<<1}, nil},
		{"nodes in two words", []uint{1, 1}, nil},
		{"no node", []uint{0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewMock(MockDGXH100)
			if err != nil {
				t.Fatal(err)
			}
			d, ret := m.DeviceGetHandleByIndex(0)
			if ret != nvml.SUCCESS {
				t.Fatal(ret)
			}
			d.(*server.Device).GetMemoryAffinityFunc = func(nodes int, _ nvml.AffinityScope) ([]uint, nvml.Return) {
				return append([]uint(nil), tt.mask...), nvml.SUCCESS
			}
			rep, err := Collect(context.Background(), m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, rep.GPUs[0].NUMANode); diff != "" {
				t.Errorf("numa node (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestDecodeAfterNoise: the agent runs through the user's login shell, whose
// rc files may print to stdout first ("Loading modules", a banner without
// its newline); the report after them must still decode.
func TestDecodeAfterNoise(t *testing.T) {
	var buf bytes.Buffer
	if err := RunAgent(context.Background(), &buf, AgentOptions{Mock: MockDGXH100}); err != nil {
		t.Fatal(err)
	}
	for name, noise := range map[string]string{
		"none":            "",
		"lines":           "Loading modules {gcc, cuda}\nWelcome\n",
		"without newline": "Welcome {to} node1 ",
	} {
		t.Run(name, func(t *testing.T) {
			rep, err := Decode(append([]byte(noise), buf.Bytes()...))
			if err != nil || rep.Mock != MockDGXH100 || len(rep.GPUs) != 8 {
				t.Errorf("decode: %v", err)
			}
		})
	}
	if _, err := Decode([]byte("Welcome\nnot a report {\n")); err == nil {
		t.Error("noise without a report decoded")
	}
}

// TestNVLinkErrorCounters: each active link reports its four data-link
// error counters (zero on the healthy mock); nvlink_errors gives link 0
// of one GPU replayed flits, and a link that is down reports none.
func TestNVLinkErrorCounters(t *testing.T) {
	rep, err := CollectAgent(context.Background(), AgentOptions{Mock: MockDGXH100, Faults: []Fault{
		{Kind: FaultNVLinkErrors, GPU: 4, Value: 120}, {Kind: FaultNVLinkDown, GPU: 2},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range rep.GPUs {
		if len(g.NVLinks) != 18 {
			t.Fatalf("GPU %d: %d links, want 18", i, len(g.NVLinks))
		}
		for _, l := range g.NVLinks {
			want := &NVLinkErrors{}
			switch {
			case i == 2 && l.Link == 0:
				want = nil
			case i == 4 && l.Link == 0:
				want = &NVLinkErrors{Replay: 120}
			}
			if diff := cmp.Diff(want, l.Errors); diff != "" {
				t.Errorf("GPU %d link %d errors (-want +got):\n%s", i, l.Link, diff)
			}
		}
	}
}
