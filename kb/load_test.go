package kb

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// dataRows counts the non-empty data lines of an embedded table.
func dataRows(t *testing.T, name string) int {
	t.Helper()
	b, err := fs.ReadFile(dataFS, "data/"+name)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if i > 0 && strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
}

// TestLoadEveryRow checks that every row of every table parsed into an
// answer: a row silently skipped would be a fact lint never sees.
func TestLoadEveryRow(t *testing.T) {
	kb, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	aliasRows := dataRows(t, "gpu-aliases.tsv")
	multiNode := 0
	for _, f := range kb.floors {
		if f.MultiNode() {
			multiNode++
		}
	}
	tests := []struct {
		file string
		got  int
	}{
		{"cuda-driver.tsv", len(kb.cuda)},
		{"cuda-mvc.tsv", len(kb.mvc)},
		{"driver-branches.tsv", len(kb.branches)},
		{"gpu-arch.tsv", len(kb.archs)},
		{"gpu-models.tsv", len(kb.gpus)},
		{"nccl-cuda.tsv", len(kb.nccl)},
		{"ngc-pytorch.tsv", len(kb.ngc) - dataRows(t, "ngc-triton.tsv")},
		{"container-toolkit.tsv", len(kb.toolkit)},
		{"container-toolkit-features.tsv", len(kb.features)},
		{"nvidia-ctk.tsv", len(kb.runtimes)},
		{"dcgm-driver.tsv", len(kb.dcgm)},
		{"facts.tsv", len(kb.facts)},
		{"nccl-thresholds.tsv", len(kb.nccltest)},
		{"nccl-floors.tsv", len(kb.floors) - multiNode},
		{"nccl-multinode-floors.tsv", multiNode},
		{"installed-packages.tsv", len(kb.installed)},
		{"package-sets.tsv", len(kb.packageSets)},
		{"gpu-memory-bandwidth.tsv", len(kb.hbm)},
		{"pcie-link-rates.tsv", len(kb.pcie)},
		{"nvlink-domains.tsv", len(kb.nvlinkDomains)},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			if want := dataRows(t, tt.file); tt.got != want {
				t.Errorf("parsed %d rows of %s, file has %d", tt.got, tt.file, want)
			}
		})
	}
	t.Run("packages.tsv", func(t *testing.T) {
		// Rows without kb_ columns (keyring, helper, Canonical archive) are
		// documentation only; every kb_ row must load.
		b, _ := fs.ReadFile(dataFS, "data/packages.tsv")
		want := 0
		for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n")[1:] {
			if c := strings.Split(l, "\t"); len(c) > 8 && c[8] != "" {
				want++
			}
		}
		if len(kb.packages)+len(kb.auxPackages) != want || want == 0 {
			t.Errorf("parsed %d package rows, file has %d with kb_ columns", len(kb.packages)+len(kb.auxPackages), want)
		}
	})
	t.Run("gpu-aliases.tsv", func(t *testing.T) {
		n := 0
		for _, idx := range kb.aliases {
			n += len(idx)
		}
		// Each model adds its full name and its name without the remark as
		// aliases; explicit aliases may repeat those.
		if n < aliasRows || n > aliasRows+2*len(kb.gpus) {
			t.Errorf("%d alias entries for %d alias rows and %d models", n, aliasRows, len(kb.gpus))
		}
	})
}

// TestLoadErrorsNameFileAndLine corrupts one cell of a copy of the data and
// checks that Load's error points at it.
func TestLoadErrorsNameFileAndLine(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		edit     func(string) string
		wantLine string
	}{
		{
			name:     "bad status word",
			file:     "data/cuda-mvc.tsv",
			edit:     func(s string) string { return strings.Replace(s, "\tconfirmed\t", "\tprobably\t", 1) },
			wantLine: "data/cuda-mvc.tsv:2:",
		},
		{
			name:     "missing tab",
			file:     "data/nvidia-ctk.tsv",
			edit:     func(s string) string { return strings.Replace(s, "docker\tnvidia-ctk", "docker nvidia-ctk", 1) },
			wantLine: "data/nvidia-ctk.tsv:2:",
		},
		{
			name:     "unparsable driver",
			file:     "data/cuda-driver.tsv",
			edit:     func(s string) string { return strings.Replace(s, ">=595.58.03", ">=595,58", 1) },
			wantLine: "data/cuda-driver.tsv:7:",
		},
		{
			name:     "alias of an unknown model",
			file:     "data/gpu-aliases.tsv",
			edit:     func(s string) string { return strings.Replace(s, "\tH100 NVL\t", "\tH100 NVX\t", 1) },
			wantLine: "data/gpu-aliases.tsv:",
		},
		{
			name:     "kb_builds not in the prose",
			file:     "data/nccl-cuda.tsv",
			edit:     func(s string) string { return strings.Replace(s, "12.1@confirmed\tno", "12.7@confirmed\tno", 1) },
			wantLine: "data/nccl-cuda.tsv:2:",
		},
		{
			name:     "remedy with an unknown action",
			file:     "data/remediation.tsv",
			edit:     func(s string) string { return strings.Replace(s, "\treboot\tRESTART_BM", "\treplace\tRESTART_BM", 1) },
			wantLine: "data/remediation.tsv:80:",
		},
		{
			name:     "missing column",
			file:     "data/dcgm-driver.tsv",
			edit:     func(s string) string { return strings.Replace(s, "dcgm_major", "dcgm", 1) },
			wantLine: "data/dcgm-driver.tsv:1:",
		},
		{
			name: "floor of an unknown platform",
			file: "data/nccl-floors.tsv",
			edit: func(s string) string {
				return strings.Replace(s, "Azure ND96isr H100 v5 (8x H100)", "No Such Platform", 1)
			},
			wantLine: "data/nccl-floors.tsv:2:",
		},
		{
			name:     "installed package the sourced table does not name",
			file:     "data/installed-packages.tsv",
			edit:     func(s string) string { return strings.Replace(s, "\tlibnccl2\t", "\tlibnccl9\t", 1) },
			wantLine: "data/installed-packages.tsv:5:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			entries, err := fs.ReadDir(dataFS, "data")
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				b, err := fs.ReadFile(dataFS, "data/"+e.Name())
				if err != nil {
					t.Fatal(err)
				}
				fsys["data/"+e.Name()] = &fstest.MapFile{Data: b}
			}
			orig := string(fsys[tt.file].Data)
			edited := tt.edit(orig)
			if edited == orig {
				t.Fatal("edit changed nothing; the test data moved")
			}
			fsys[tt.file] = &fstest.MapFile{Data: []byte(edited)}
			_, err = load(fsys)
			if err == nil {
				t.Fatal("load succeeded on corrupted data")
			}
			if !strings.HasPrefix(err.Error(), tt.wantLine) {
				t.Errorf("error %q does not start with %q", err, tt.wantLine)
			}
		})
	}
}

func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if _, err := Load(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestModelKey(t *testing.T) {
	for in, want := range map[string]string{
		"NVIDIA H100 80GB HBM3": "H100", "NVIDIA A100-SXM4-40GB": "A100", "NVIDIA L40S": "L40S",
		"NVIDIA L4": "L4", "NVIDIA A10": "A10", "Tesla V100-SXM2-32GB": "V100", "h200": "H200", "Mystery": "MYSTERY",
		// gpuform's own spellings (hardware profiles) reduce the same way.
		"A100 SXM4 80GB": "A100", "H100 SXM5 80GB": "H100",
	} {
		if got := ModelKey(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// TestFloorsResolve: every floor verify judges by points at a sourced
// floor row, with its number and message size.
func TestFloorsResolve(t *testing.T) {
	kb := mustKB(t)
	floors := kb.NCCLFloors()
	if len(floors) == 0 {
		t.Fatal("no floors")
	}
	for _, f := range floors {
		_, _, avg := f.Threshold.AvgRange()
		if f.Threshold.Kind != "floor" || f.Threshold.BusBWGBps <= 0 || (f.Threshold.MessageBytes() <= 0 && !avg) || len(f.Threshold.Sources) == 0 {
			t.Errorf("%s %s: floor row without number, size or source: %+v", f.GPUModel, f.Interconnect, f.Threshold)
		}
	}
}

// TestMultiNodeFloors: the multi-node index reads node counts ("2", "2+"),
// networks and the sweep an average floor was read over.
func TestMultiNodeFloors(t *testing.T) {
	kb := mustKB(t)
	type key struct{ model, network, collective string }
	got := map[key]NCCLFloor{}
	for _, f := range kb.NCCLFloors() {
		if f.MultiNode() {
			got[key{f.GPUModel, f.Network, f.Collective}] = f
		} else if f.Network != "" || f.Nodes != 1 {
			t.Errorf("single-node floor %+v carries a network or node count", f)
		}
	}
	tests := map[string]struct {
		key      key
		busbw    float64
		nodes    int
		atLeast  bool
		size     int64
		avgLo    int64
		avgHi    int64
		platform string
	}{
		"GKE TCPXO all_reduce": {key{"H100", "gcp_tcpxo", "all_reduce"}, 300, 2, true, 8 << 30, 0, 0, "a3-megagpu-8g"},
		"NDR all_reduce":       {key{"H100", "ib_ndr", "all_reduce"}, 300, 2, true, 16 << 30, 0, 0, "8x 400 Gb/s NDR"},
		"EKS EFA all_reduce":   {key{"H100", "aws_efa", "all_reduce"}, 300, 2, true, 16 << 30, 0, 0, "EKS"},
		"A4 all_gather":        {key{"B200", "roce", "all_gather"}, 250, 2, false, 0, 2 << 30, 8 << 30, "a4-highgpu-8g"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			f, ok := got[tt.key]
			if !ok {
				t.Fatalf("no floor for %+v", tt.key)
			}
			lo, hi, _ := f.Threshold.AvgRange()
			if f.Threshold.BusBWGBps != tt.busbw || f.Nodes != tt.nodes || f.MinNodes != tt.atLeast || f.Threshold.MessageBytes() != tt.size ||
				lo != tt.avgLo || hi != tt.avgHi || !strings.Contains(f.Threshold.Platform, tt.platform) || f.GPUs != 8 {
				t.Errorf("%+v (avg %d-%d)", f, lo, hi)
			}
		})
	}
}
