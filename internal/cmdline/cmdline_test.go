package cmdline

import (
	"strings"
	"testing"
)

// TestLauncher: every form a multi-node command takes in the wild is seen
// as one (issue 11 item 2), and single-node commands are not.
func TestLauncher(t *testing.T) {
	tests := map[string]struct {
		cmd  string
		want string
	}{
		"mpirun":                  {"mpirun -np 16 -H a:8,b:8 all_reduce_perf -b 8 -e 8G -g 1", "mpirun"},
		"absolute path":           {"/usr/bin/mpirun -np 16 all_reduce_perf -g 1", "mpirun"},
		"hpcx path":               {"/opt/hpcx/ompi/bin/mpirun -np 16 all_reduce_perf", "mpirun"},
		"environment assignment":  {"NCCL_IB_DISABLE=0 mpirun -np 16 all_reduce_perf -g 1", "mpirun"},
		"two assignments":         {"NCCL_DEBUG=INFO NCCL_IB_HCA=mlx5 srun -N 2 all_reduce_perf", "srun"},
		"env":                     {"env NCCL_DEBUG=INFO srun -N 2 --ntasks-per-node=8 all_reduce_perf -g 1", "srun"},
		"env with options":        {"env -u OMPI_MCA_btl -i NCCL_DEBUG=WARN /usr/bin/srun -N 2 all_reduce_perf", "srun"},
		"timeout":                 {"timeout 600 mpirun -np 16 all_reduce_perf -g 1", "mpirun"},
		"timeout with kill-after": {"timeout -k 10 -s TERM 600 mpirun -np 16 all_reduce_perf", "mpirun"},
		"nice":                    {"nice -n 5 mpiexec -n 16 all_reduce_perf", "mpiexec"},
		"nested wrappers":         {"NCCL_DEBUG=INFO timeout 600 env NCCL_ALGO=Ring nice /usr/local/bin/mpirun -np 16 all_reduce_perf", "mpirun"},
		"mpiexec.hydra":           {"mpiexec.hydra -n 16 -ppn 8 all_reduce_perf", "mpiexec.hydra"},
		"plain binary":            {"all_reduce_perf -b 8 -e 8G -g 8", ""},
		"binary by path":          {"/opt/nccl-tests/build/all_reduce_perf -g 8", ""},
		"wrapped binary":          {"timeout 600 env NCCL_DEBUG=INFO all_reduce_perf -g 8", ""},
		"assignment only":         {"NCCL_DEBUG=INFO", ""},
		"timeout without program": {"timeout 600", ""},
		"launcher as argument":    {"all_reduce_perf -g 8 mpirun", ""},
		"not splittable":          {"mpirun 'unterminated", ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Launcher(tt.cmd); got != tt.want {
				t.Errorf("Launcher(%q) = %q, want %q", tt.cmd, got, tt.want)
			}
		})
	}
}

// TestSocketForced: settings that put NCCL on its TCP socket transport,
// wherever the command passes them.
func TestSocketForced(t *testing.T) {
	tests := map[string]struct {
		cmd  string
		want string
	}{
		"mpirun -x (schmaustech L40S/H200 runs)": {"mpirun --allow-run-as-root -H 192.168.10.1:1,192.168.10.2:1 -np 2 -x NCCL_IB_DISABLE=1 -x NCCL_SOCKET_IFNAME=net1 ./build/all_reduce_perf -b 8 -e 16G -f2 -g 1", "NCCL_IB_DISABLE=1"},
		"leading assignment":                     {"NCCL_IB_DISABLE=1 mpirun -np 16 all_reduce_perf", "NCCL_IB_DISABLE=1"},
		"NCCL_NET":                               {"env NCCL_NET=Socket srun -N 2 all_reduce_perf", "NCCL_NET=Socket"},
		"srun --export list":                     {"srun -N 2 --export=ALL,NCCL_IB_DISABLE=1 all_reduce_perf", "NCCL_IB_DISABLE=1"},
		"hydra -genv":                            {"mpiexec -genv NCCL_IB_DISABLE 1 -n 16 all_reduce_perf", "NCCL_IB_DISABLE=1"},
		"IB enabled":                             {"mpirun -x NCCL_IB_DISABLE=0 -np 16 all_reduce_perf", ""},
		"other NCCL_NET":                         {"mpirun -x NCCL_NET=IB -np 16 all_reduce_perf", ""},
		"nothing":                                {"mpirun -np 16 all_reduce_perf", ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := SocketForced(tt.cmd); got != tt.want {
				t.Errorf("SocketForced(%q) = %q, want %q", tt.cmd, got, tt.want)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	good := map[string][]string{
		"all_reduce_perf -b 8 -e 8G -f 2 -g 8":  {"all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8"},
		`NCCL_ALGO=RING mpirun -x 'A B' "c\"d"`: {"NCCL_ALGO=RING", "mpirun", "-x", "A B", `c"d`},
		`a\ b`:                                  {"a b"},
	}
	for in, want := range good {
		got, err := Split(in)
		if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%q: got %q %v", in, got, err)
		}
	}
	for _, bad := range []string{"a; rm -rf /", "a $(id)", "a `id`", `a "$HOME"`, "a | b", "a > f", "'open", `"open`} {
		if _, err := Split(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
