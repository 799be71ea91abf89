package bind_test

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/bind"
)

func twoGPUs() *bind.Binding {
	return &bind.Binding{FormatVersion: bind.FormatVersion, Node: "n", GPUs: []bind.GPU{
		{Index: 0, NUMA: 0, CPUs: "0-3", NIC: "mlx5_0", RDMA: true},
		{Index: 1, NUMA: 1, CPUs: "4-7", NIC: "eth1", Netdev: "eth1"},
	}}
}

func TestLocalRankSources(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		rank    int
		from    string
		wantErr string
	}{
		{"torchrun", []string{"LOCAL_RANK=1"}, 1, "LOCAL_RANK", ""},
		{"srun", []string{"SLURM_LOCALID=1"}, 1, "SLURM_LOCALID", ""},
		{"open mpi", []string{"OMPI_COMM_WORLD_LOCAL_RANK=1"}, 1, "OMPI_COMM_WORLD_LOCAL_RANK", ""},
		{"mpich", []string{"MPI_LOCALRANKID=1"}, 1, "MPI_LOCALRANKID", ""},
		// torchrun under srun: torchrun's own rank is the process's.
		{"torchrun under srun", []string{"SLURM_LOCALID=0", "LOCAL_RANK=1"}, 1, "LOCAL_RANK", ""},
		{"none", []string{"RANK=3"}, 0, "", "no local rank"},
		{"not a number", []string{"LOCAL_RANK=x"}, 0, "", `LOCAL_RANK="x" is not a local rank`},
		{"negative", []string{"SLURM_LOCALID=-1"}, 0, "", "is not a local rank"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, from, err := bind.LocalRank(tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || r != tt.rank || from != tt.from {
				t.Fatalf("LocalRank = %d, %q, %v; want %d, %q", r, from, err, tt.rank, tt.from)
			}
		})
	}
}

func TestPrepare(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		opts    bind.Options
		argv    []string
		gpu     int
		set     []string
		wantErr string
	}{
		{"rank picks rdma nic", []string{"PATH=/bin:/usr/bin", "LOCAL_RANK=0"}, bind.Options{GPU: -1}, []string{"true"}, 0,
			[]string{"NCCL_IB_HCA==mlx5_0", "UCX_NET_DEVICES=mlx5_0:1"}, ""},
		{"ethernet nic gets ucx netdev only", []string{"PATH=/bin:/usr/bin", "LOCAL_RANK=1"}, bind.Options{GPU: -1}, []string{"true"}, 1,
			[]string{"UCX_NET_DEVICES=eth1"}, ""},
		{"-gpu beats the rank", []string{"PATH=/bin:/usr/bin", "LOCAL_RANK=0"}, bind.Options{GPU: 1, CUDAVisibleDevices: true}, []string{"true"}, 1,
			[]string{"CUDA_VISIBLE_DEVICES=1", "CUDA_DEVICE_ORDER=PCI_BUS_ID", "UCX_NET_DEVICES=eth1"}, ""},
		{"rank beyond the gpus", []string{"PATH=/bin", "SLURM_LOCALID=2"}, bind.Options{GPU: -1}, []string{"true"}, 0, nil,
			`SLURM_LOCALID=2, but the binding of node "n" has 2 GPUs`},
		{"unknown gpu", []string{"PATH=/bin"}, bind.Options{GPU: 5}, []string{"true"}, 0, nil, "has no GPU 5 (it has 0, 1)"},
		{"no rank", []string{"PATH=/bin"}, bind.Options{GPU: -1}, []string{"true"}, 0, nil, "no local rank"},
		{"no command", []string{"PATH=/bin"}, bind.Options{GPU: 0}, nil, 0, nil, "no command to run"},
		{"command not found", []string{"PATH=/nonexistent"}, bind.Options{GPU: 0}, []string{"true"}, 0, nil, "true: command not found in PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := bind.Prepare(twoGPUs(), tt.env, tt.opts, tt.argv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.GPU.Index != tt.gpu || strings.Join(l.Set, " ") != strings.Join(tt.set, " ") {
				t.Errorf("GPU %d, set %q; want GPU %d, %q", l.GPU.Index, l.Set, tt.gpu, tt.set)
			}
			if !strings.HasSuffix(l.Path, "/true") {
				t.Errorf("path %q, want true found in PATH", l.Path)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"not json", "# Managed", "not a gpuform binding file"},
		{"other version", `{"format_version": 2, "node": "n", "gpus": []}`, "format_version 2"},
		{"unknown field", `{"format_version": 1, "node": "n", "gpus": [], "x": 1}`, "unknown field"},
		{"bad cpus", `{"format_version": 1, "node": "n", "gpus": [{"index": 0, "numa_node": 0, "cpus": "a-b"}]}`, `cpus "a-b"`},
		{"out of order", `{"format_version": 1, "node": "n", "gpus": [{"index": 1, "numa_node": -1}, {"index": 0, "numa_node": -1}]}`, "out of index order"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bind.Parse([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
