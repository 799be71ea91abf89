package smi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// TestMockL40SMatchesCapture: the simulated 8x L40S board is modelled on
// the ASUS ESC8000A-E12, and its four populated slots (GPUs at 01, 41, C1,
// E1; dual-port ConnectX-7 at 21 and 81) must show the levels the real
// host's `nvidia-smi topo -m` shows: every GPU pair and GPU–NIC pair.
// The other simulated boards have no public capture of their own matrix;
// their layouts say "modelled" where they are.
func TestMockL40SMatchesCapture(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "topo", "topo-m-4xRTX6000Ada-pcie-4nic-asus-esc8000a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := ParseTopo(data)
	if err != nil {
		t.Fatal(err)
	}
	m, err := nvmlfacts.NewMock(nvmlfacts.MockL40SPCIe)
	if err != nil {
		t.Fatal(err)
	}
	gpuBus := []string{"0000:01:00.0", "0000:41:00.0", "0000:c1:00.0", "0000:e1:00.0"}
	nicBus := map[string]string{"mlx5_0": "0000:21:00.0", "mlx5_1": "0000:21:00.1", "mlx5_2": "0000:81:00.0", "mlx5_3": "0000:81:00.1"}
	for _, p := range top.GPUPairs {
		got, err := m.CommonAncestor(gpuBus[p.A], gpuBus[p.B])
		if err != nil {
			t.Fatal(err)
		}
		if got != p.Level {
			t.Errorf("GPU%d (%s)–GPU%d (%s): simulated %s, the real host %s", p.A, gpuBus[p.A], p.B, gpuBus[p.B], got, p.Level)
		}
	}
	for _, p := range top.NICPairs {
		got, err := m.CommonAncestor(gpuBus[p.GPU], nicBus[p.NIC])
		if err != nil {
			t.Fatal(err)
		}
		if got != p.Level {
			t.Errorf("GPU%d–%s: simulated %s, the real host %s", p.GPU, p.NIC, got, p.Level)
		}
	}
	if len(top.GPUPairs) != 6 || len(top.NICPairs) != 16 {
		t.Errorf("%d GPU pairs, %d NIC pairs compared", len(top.GPUPairs), len(top.NICPairs))
	}
}
