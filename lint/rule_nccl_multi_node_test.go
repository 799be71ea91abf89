package lint

import "testing"

// TestSpansHosts: only a launcher's own host options count, per launcher
// family, and never the test program's options.
func TestSpansHosts(t *testing.T) {
	tests := map[string]struct {
		cmd  string
		want string
	}{
		"mpirun host list":      {"mpirun -np 16 -H a,b all_reduce_perf -g 1", "-H"},
		"mpirun hostfile":       {"/usr/bin/mpirun --hostfile=hosts -np 16 all_reduce_perf", "--hostfile"},
		"srun nodes behind env": {"env NCCL_DEBUG=INFO timeout 600 srun --nodes=2 all_reduce_perf", "--nodes"},
		"srun -N":               {"srun -N 2 --ntasks-per-node=8 all_reduce_perf", "-N"},
		"OpenMPI -N per node":   {"mpirun -N 8 all_reduce_perf -g 1", ""},
		"program option after":  {"srun --ntasks=8 all_reduce_perf -N 2", ""},
		"single-node mpirun":    {"mpirun -np 8 all_reduce_perf -g 1", ""},
		"no launcher":           {"all_reduce_perf -g 8 -H x", ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := spansHosts(tt.cmd); got != tt.want {
				t.Errorf("spansHosts(%q) = %q, want %q", tt.cmd, got, tt.want)
			}
		})
	}
}
