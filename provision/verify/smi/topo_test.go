package smi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// TestParseTopo reads every real capture in testdata/topo and checks what
// an operator would read off each matrix by eye.
func TestParseTopo(t *testing.T) {
	type pair struct {
		a, b  int
		level nvmlfacts.Level
		nv    int
	}
	type nic struct {
		gpu   int
		name  string
		level nvmlfacts.Level
	}
	type gpu struct {
		idx     int
		cpus    string
		numa    int // -1: not reported
		gpuNUMA int // -1: not reported
	}
	tests := map[string]struct {
		gpus, nics int
		pairs      []pair
		nicPairs   []nic
		affinity   []gpu
	}{
		"topo-m-8xA100-nv12-17nic.txt": {8, 17,
			[]pair{{0, 1, "", 12}, {6, 7, "", 12}},
			[]nic{{0, "mlx5_2", nvmlfacts.LevelPXB}, {0, "mlx5_6", nvmlfacts.LevelSys}, {7, "mlx5_17", nvmlfacts.LevelPXB}, {7, "mlx5_bond_0", nvmlfacts.LevelSys}},
			[]gpu{{0, "0-103", 0, -1}, {7, "0-103", 0, -1}}},
		"topo-m-4xA10-pcie-sys-2nic.txt": {4, 2,
			[]pair{{0, 3, nvmlfacts.LevelSys, 0}},
			[]nic{{2, "mlx5_1", nvmlfacts.LevelSys}},
			[]gpu{{3, "0-127", 0, -1}}},
		"topo-m-2xGTX1080Ti-consumer-pcie-phb.txt": {2, 0,
			[]pair{{0, 1, nvmlfacts.LevelPHB, 0}}, nil,
			[]gpu{{1, "0-11", -1, -1}}},
		"topo-m-4xRTX6000Ada-pcie-4nic-asus-esc8000a.txt": {4, 4,
			[]pair{{0, 1, nvmlfacts.LevelNode, 0}, {1, 2, nvmlfacts.LevelSys, 0}},
			[]nic{{0, "mlx5_0", nvmlfacts.LevelNode}, {0, "mlx5_2", nvmlfacts.LevelSys}, {3, "mlx5_3", nvmlfacts.LevelNode}},
			[]gpu{{0, "0-31", 0, -1}, {2, "32-63", 1, -1}}},
		"topo-m-dgx1-8xV100-4nic-with-ansi-escapes.txt": {8, 4,
			[]pair{{0, 1, "", 1}, {0, 3, "", 2}, {0, 5, nvmlfacts.LevelSys, 0}, {4, 7, "", 2}},
			[]nic{{0, "mlx5_0", nvmlfacts.LevelPIX}, {0, "mlx5_1", nvmlfacts.LevelPHB}, {7, "mlx5_3", nvmlfacts.LevelPHB}},
			[]gpu{{0, "0-19,40-59", 0, -1}, {4, "20-39,60-79", 1, -1}}},
		"topo-mp-dgx1-8xV100-4nic.txt": {8, 4,
			[]pair{{0, 1, nvmlfacts.LevelPIX, 0}, {0, 2, nvmlfacts.LevelPHB, 0}, {3, 4, nvmlfacts.LevelSys, 0}},
			[]nic{{5, "mlx5_3", nvmlfacts.LevelPIX}},
			[]gpu{{7, "20-39,60-79", 1, -1}}},
		"topo-mp-dell-r760xa-1gpu-10nic-NODE.txt": {1, 10, nil,
			[]nic{{0, "mlx5_0", nvmlfacts.LevelNode}, {0, "mlx5_9", nvmlfacts.LevelNode}},
			[]gpu{{0, "0,2,4,6,8,10", 0, -1}}},
		"topo-m-4xK40m-soc-mlx4-old-driver.txt": {4, 1,
			[]pair{{0, 1, nvmlfacts.LevelPHB, 0}, {1, 2, nvmlfacts.LevelSys, 0}},
			[]nic{{0, "mlx4_0", nvmlfacts.LevelSys}, {3, "mlx4_0", nvmlfacts.LevelPHB}},
			[]gpu{{0, "0-5", -1, -1}, {2, "6-11", -1, -1}}},
		// A node of Princeton's della cluster, inside a job: the CPU Affinity of
		// GPUs 0-3 is printed empty and that of GPUs 4-7 as "1".
		"topo-m-8gpu-nv18-6nic-della-empty-affinity.txt": {8, 6,
			[]pair{{0, 1, "", 18}, {3, 4, "", 18}, {6, 7, "", 18}},
			[]nic{{0, "mlx5_0", nvmlfacts.LevelPIX}, {0, "mlx5_1", nvmlfacts.LevelPIX}, {3, "mlx5_2", nvmlfacts.LevelPIX}, {4, "mlx5_4", nvmlfacts.LevelPIX}, {6, "mlx5_5", nvmlfacts.LevelPIX}, {1, "mlx5_0", nvmlfacts.LevelNode}},
			[]gpu{{0, "", 0, -1}, {3, "", 0, -1}, {4, "1", 1, -1}, {7, "1", 1, -1}}},
		"topo-matrix-8xH100-nv18-no-nic-rhel-ai.txt": {8, 0,
			[]pair{{0, 7, "", 18}, {3, 5, "", 18}}, nil,
			[]gpu{{0, "0-63", 0, -1}, {7, "0-63", 0, -1}}},
		// Four of eight GPUs visible (CUDA_VISIBLE_DEVICES): only GPU0's
		// CPU Affinity is printed.
		"topo-m-4of8-nv18-cuda-visible-devices-brev.txt": {4, 0,
			[]pair{{0, 3, "", 18}, {1, 2, "", 18}}, nil,
			[]gpu{{0, "44-51,148-155", 0, -1}, {1, "", 1, -1}, {3, "", 1, -1}}},
		"topo-m-8gpu-nv18-12nic-tpgds-aihub0007.txt": {8, 12,
			[]pair{{0, 1, "", 18}, {5, 6, "", 18}},
			[]nic{{0, "mlx5_0", nvmlfacts.LevelPIX}, {3, "mlx5_5", nvmlfacts.LevelPIX}, {5, "mlx5_7", nvmlfacts.LevelPIX}, {7, "mlx5_11", nvmlfacts.LevelPIX}, {0, "mlx5_1", nvmlfacts.LevelNode}},
			[]gpu{{0, "0-191", 0, -1}, {5, "0-191", 0, -1}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "topo", name))
			if err != nil {
				t.Fatal(err)
			}
			top, err := ParseTopo(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(top.GPUs) != tc.gpus || len(top.NICs) != tc.nics {
				t.Errorf("%d GPUs and %d NICs (%v), want %d and %d", len(top.GPUs), len(top.NICs), top.NICs, tc.gpus, tc.nics)
			}
			if want := tc.gpus * (tc.gpus - 1) / 2; len(top.GPUPairs) != want {
				t.Errorf("%d GPU pairs, want %d", len(top.GPUPairs), want)
			}
			if want := tc.gpus * tc.nics; len(top.NICPairs) != want {
				t.Errorf("%d GPU–NIC pairs, want %d", len(top.NICPairs), want)
			}
			if len(top.Warnings) > 0 {
				t.Errorf("warnings: %q", top.Warnings)
			}
			for _, p := range tc.pairs {
				found := false
				for _, g := range top.GPUPairs {
					if g.A == p.a && g.B == p.b {
						found = true
						if g.Level != p.level || g.NVLinks != p.nv {
							t.Errorf("GPU%d–GPU%d: level %q NV%d, want %q NV%d", p.a, p.b, g.Level, g.NVLinks, p.level, p.nv)
						}
					}
				}
				if !found {
					t.Errorf("no pair GPU%d–GPU%d", p.a, p.b)
				}
			}
			for _, n := range tc.nicPairs {
				found := false
				for _, g := range top.NICPairs {
					if g.GPU == n.gpu && g.NIC == n.name {
						found = true
						if g.Level != n.level {
							t.Errorf("GPU%d–%s: %q, want %q", n.gpu, n.name, g.Level, n.level)
						}
					}
				}
				if !found {
					t.Errorf("no pair GPU%d–%s", n.gpu, n.name)
				}
			}
			for _, a := range tc.affinity {
				var g *TopoGPU
				for i := range top.GPUs {
					if top.GPUs[i].Index == a.idx {
						g = &top.GPUs[i]
					}
				}
				if g == nil {
					t.Fatalf("no GPU%d row", a.idx)
				}
				num := func(p *int) int {
					if p == nil {
						return -1
					}
					return *p
				}
				if g.CPUAffinity != a.cpus || num(g.NUMA) != a.numa || num(g.GPUNUMAID) != a.gpuNUMA {
					t.Errorf("GPU%d: CPUs %q NUMA %d GPU NUMA %d, want %q %d %d", a.idx, g.CPUAffinity, num(g.NUMA), num(g.GPUNUMAID), a.cpus, a.numa, a.gpuNUMA)
				}
			}
		})
	}
}

// TestParseTopoShiftedRow: the published matrix of tpgds-aihub0008 lost a
// tab in GPU5's row ("PIXNODE") and one in NIC7's: GPU5's cells from there
// on, and its affinity columns, would be read one column off, so they are
// not read and the warnings say why; every other cell reads as printed.
func TestParseTopoShiftedRow(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "topo", "topo-m-8gpu-nv18-12nic-tpgds-aihub0008-tabs-lost-in-copy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := ParseTopo(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(top.GPUPairs) != 28 {
		t.Errorf("%d GPU pairs, want 28", len(top.GPUPairs))
	}
	for _, p := range top.GPUPairs {
		if p.NVLinks != 18 {
			t.Errorf("GPU%d–GPU%d NV%d, want NV18", p.A, p.B, p.NVLinks)
		}
	}
	gpu5 := map[string]nvmlfacts.Level{}
	for _, p := range top.NICPairs {
		if p.GPU == 5 {
			gpu5[p.NIC] = p.Level
		}
	}
	// mlx5_0 to mlx5_6 come before the run-together cell.
	if len(gpu5) != 7 || gpu5["mlx5_6"] != nvmlfacts.LevelNode || gpu5["mlx5_7"] != "" {
		t.Errorf("GPU5's NIC pairs: %v", gpu5)
	}
	for _, g := range top.GPUs {
		if g.Index == 5 && (g.CPUAffinity != "" || g.NUMA != nil) {
			t.Errorf("GPU5's affinity read from shifted cells: %q %v", g.CPUAffinity, g.NUMA)
		}
		if g.Index == 4 && g.CPUAffinity != "0-191" {
			t.Errorf("GPU4: %q", g.CPUAffinity)
		}
	}
	joined := strings.Join(top.Warnings, "\n")
	if !strings.Contains(joined, `GPU5–mlx5_7: unknown link "PIXNODE"`) || !strings.Contains(joined, "GPU5: CPU and NUMA affinity not read") {
		t.Errorf("warnings:\n%s", joined)
	}
}

// TestParseTopoRefuses: output that is not a topology matrix is an error,
// not an empty topology that would pass every pairing.
func TestParseTopoRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"empty":     "",
		"not topo":  "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
		"no rows":   "\tGPU0\tGPU1\tCPU Affinity\n\nLegend:\n",
		"short row": "\tGPU0\tGPU1\tNIC0\tCPU Affinity\nGPU0\t X \tNV4\n",
	} {
		if _, err := ParseTopo([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzParseTopo(f *testing.F) {
	for _, name := range []string{"topo-m-dgx1-8xV100-4nic-with-ansi-escapes.txt", "topo-mp-dell-r760xa-1gpu-10nic-NODE.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "topo", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		top, err := ParseTopo([]byte(s))
		if err != nil {
			return
		}
		for _, p := range top.GPUPairs {
			if p.A >= p.B || (p.Level == "") == (p.NVLinks == 0) {
				t.Fatalf("bad pair %+v", p)
			}
		}
	})
}
