package gres_test

import (
	"maps"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/gres"
)

// TestSlurmCores maps NUMA cpulists to Slurm core indexes, the numbering
// gres.conf's Cores= takes.
func TestSlurmCores(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []facts.NUMANode
		cpuCores int
		want     map[int]string
		err      bool
	}{
		{name: "hyperthreads numbered after the cores", nodes: []facts.NUMANode{{ID: 0, CPUs: "0-3,8-11"}, {ID: 1, CPUs: "4-7,12-15"}},
			want: map[int]string{0: "0-3", 1: "4-7"}},
		{name: "no hyperthreads", nodes: []facts.NUMANode{{ID: 0, CPUs: "0-7"}, {ID: 1, CPUs: "8-15"}},
			want: map[int]string{0: "0-7", 1: "8-15"}},
		// Sockets interleaved CPU by CPU (some BIOSes): Slurm still numbers
		// socket 0's cores first.
		{name: "interleaved sockets", nodes: []facts.NUMANode{{ID: 0, CPUs: "0,2,4,6,8,10,12,14"}, {ID: 1, CPUs: "1,3,5,7,9,11,13,15"}},
			want: map[int]string{0: "0-3", 1: "4-7"}},
		// Without hyperthreads the same numbering reads as hyperthreads;
		// cpu_cores settles it.
		{name: "interleaved sockets, cpu_cores", nodes: []facts.NUMANode{{ID: 0, CPUs: "0,2,4,6"}, {ID: 1, CPUs: "1,3,5,7"}}, cpuCores: 8,
			want: map[int]string{0: "0-3", 1: "4-7"}},
		// Siblings side by side (0,1 one core): only cpu_cores tells.
		{name: "cpu_cores gives the threads", nodes: []facts.NUMANode{{ID: 0, CPUs: "0-7"}, {ID: 1, CPUs: "8-15"}}, cpuCores: 8,
			want: map[int]string{0: "0-3", 1: "4-7"}},
		// A node listed out of order and a memory-only node (HBM, CXL).
		{name: "order by first CPU, memory-only node", nodes: []facts.NUMANode{{ID: 1, CPUs: "0-1"}, {ID: 0, CPUs: "2-3"}, {ID: 2, CPUs: ""}},
			want: map[int]string{1: "0-1", 0: "2-3"}},
		{name: "cpu_cores not dividing the CPUs", nodes: []facts.NUMANode{{ID: 0, CPUs: "0-7"}}, cpuCores: 3, err: true},
		{name: "no CPUs", nodes: []facts.NUMANode{{ID: 0}}, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := gres.SlurmCores(tt.nodes, tt.cpuCores)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if !tt.err && !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestParseSlurmdG reads the GRES lines of slurmd -G output and its error
// lines, and skips the rest.
func TestParseSlurmdG(t *testing.T) {
	out := `slurmd: gpu/nvml: _get_system_gpu_list_nvml: 2 GPU system device(s) detected
slurmd: error: /dev/nvidia9 is not a valid character or block device, fix your gres.conf
slurmd: Gres Name=gpu Type=nvidia_h100_80gb_hbm3 Count=1 Index=0 ID=7696487 File=/dev/nvidia0 Cores=0-55 CoreCnt=224 Links=-1,18 Flags=HAS_FILE,HAS_TYPE,ENV_NVML
slurmd: Gres Name=gpu Type=nvidia_h100_80gb_hbm3 Count=1 Index=1 ID=7696487 File=/dev/nvidia1 CoreCnt=224 Links=18,-1 Flags=HAS_FILE,HAS_TYPE,ENV_NVML
`
	got, errs := gres.ParseSlurmdG(out)
	want := []gres.Detected{
		{Name: "gpu", Type: "nvidia_h100_80gb_hbm3", File: "/dev/nvidia0", Cores: "0-55", Links: "-1,18"},
		// No Cores=: slurmd ties the GPU to no cores.
		{Name: "gpu", Type: "nvidia_h100_80gb_hbm3", File: "/dev/nvidia1", Links: "18,-1"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if len(errs) != 1 || errs[0] != "/dev/nvidia9 is not a valid character or block device, fix your gres.conf" {
		t.Errorf("errors %q", errs)
	}
}
