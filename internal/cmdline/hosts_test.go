package cmdline

import (
	"strings"
	"testing"
)

// TestForHosts: a group's multi-node command is rewritten to run on two
// nodes with the same ranks per node and everything else as written.
func TestForHosts(t *testing.T) {
	pair := []string{"n3", "n4"}
	tests := map[string]struct {
		cmd         string
		nodes, gpus int
		want        string
		err         string
	}{
		"mpirun -np over the group's nodes": {
			cmd: "mpirun -np 64 all_reduce_perf -b 8 -e 8G -f 2 -g 1", nodes: 8,
			want: "mpirun -np 16 -H n3:8,n4:8 all_reduce_perf -b 8 -e 8G -f 2 -g 1",
		},
		"mpirun -npernode and a host list": {
			cmd:  "NCCL_IB_DISABLE=0 /usr/bin/mpirun -np 16 -npernode 8 -H a:8,b:8 -x NCCL_DEBUG=WARN all_reduce_perf -g 1",
			want: "NCCL_IB_DISABLE=0 /usr/bin/mpirun -np 16 -H n3:8,n4:8 -x NCCL_DEBUG=WARN all_reduce_perf -g 1",
		},
		"mpirun --hostfile and --np=": {
			cmd: "timeout 600 mpirun --hostfile /etc/hosts.mpi --np=64 all_reduce_perf -g 1", nodes: 8,
			want: "timeout 600 mpirun -np 16 -H n3:8,n4:8 all_reduce_perf -g 1",
		},
		// Nothing says the ranks per node: the GPU count does.
		"mpirun without counts": {
			cmd: "mpirun all_reduce_perf -g 1", gpus: 8,
			want: "mpirun -np 16 -H n3:8,n4:8 all_reduce_perf -g 1",
		},
		// The test's own -n (iterations) is not the launcher's.
		"test options untouched": {
			cmd:  "srun -N 8 --ntasks-per-node=8 all_reduce_perf -n 50 -w 5 -g 1",
			want: "srun -N 2 -n 16 --ntasks-per-node=8 -w n3,n4 all_reduce_perf -n 50 -w 5 -g 1",
		},
		"srun nodelist and ntasks": {
			cmd: "srun --nodes=8 -n 64 -w gpu[01-08] --mpi=pmix all_reduce_perf -g 1", nodes: 8,
			want: "srun -N 2 -n 16 --ntasks-per-node=8 -w n3,n4 --mpi=pmix all_reduce_perf -g 1",
		},
		"mpiexec.hydra": {
			cmd:  "mpiexec.hydra -n 64 -ppn 8 -hosts a,b,c all_reduce_perf -g 1",
			want: "mpiexec.hydra -np 16 -ppn 8 -hosts n3,n4 all_reduce_perf -g 1",
		},
		"jsrun is refused": {
			cmd: "jsrun -n 16 all_reduce_perf", gpus: 8,
			err: "cannot choose the hosts of a jsrun command",
		},
		"no test program": {
			cmd: "mpirun -np 16 ./run-nccl.sh", gpus: 8,
			err: "names no nccl-tests program",
		},
		"no per-node count": {
			cmd: "mpirun -np 60 all_reduce_perf", nodes: 8,
			err: "cannot tell how many ranks",
		},
		"not a launcher": {
			cmd: "all_reduce_perf -g 8", gpus: 8,
			err: "not started by a multi-host launcher",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ForHosts(tt.cmd, pair, tt.nodes, tt.gpus)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ForHosts(%q) = %q, %v; want error %q", tt.cmd, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ForHosts(%q) =\n %q, %v\nwant\n %q", tt.cmd, got, err, tt.want)
			}
			if Launcher(got) == "" {
				t.Errorf("the rewritten command %q is no longer a launcher command", got)
			}
		})
	}
}

func TestNamesHosts(t *testing.T) {
	for cmd, want := range map[string]bool{
		"mpirun -np 16 -H a:8,b:8 all_reduce_perf":        true,
		"mpirun --hostfile=/etc/h -np 16 all_reduce_perf": true,
		"srun -N 2 -w gpu[1-2] all_reduce_perf":           true,
		"mpirun -np 16 all_reduce_perf -w 5":              false,
		"srun -N 2 all_reduce_perf":                       false,
		"all_reduce_perf -g 8":                            false,
	} {
		if got := NamesHosts(cmd); got != want {
			t.Errorf("NamesHosts(%q) = %v, want %v", cmd, got, want)
		}
	}
}

func TestHostList(t *testing.T) {
	for cmd, want := range map[string][3]string{
		"mpirun -np 16 -H gpu01,gpu02 all_reduce_perf":    {"-H", "gpu01,gpu02", "list"},
		"mpirun --hostfile=/etc/h -np 16 all_reduce_perf": {"--hostfile", "/etc/h", "file"},
		"srun -N 2 -w gpu[1-2] all_reduce_perf":           {"-w", "gpu[1-2]", "list"},
		"srun --nodefile=hosts all_reduce_perf":           {"--nodefile", "hosts", "file"},
		"mpirun -np 16 all_reduce_perf -w 5":              {"", "", ""},
		"all_reduce_perf -g 8":                            {"", "", ""},
	} {
		opt, v, ok := HostList(cmd)
		kind := ""
		if ok {
			kind = "list"
			if IsHostFile(opt) {
				kind = "file"
			}
		}
		if got := [3]string{opt, v, kind}; got != want {
			t.Errorf("HostList(%q) = %q, want %q", cmd, got, want)
		}
	}
}

func TestJoinRoundTrip(t *testing.T) {
	words := []string{"env", "A=b c", "it's", "", "-x", "NCCL_DEBUG=INFO"}
	got, err := Split(Join(words))
	if err != nil || strings.Join(got, "|") != strings.Join(words, "|") {
		t.Fatalf("Split(Join(%q)) = %q, %v", words, got, err)
	}
}
