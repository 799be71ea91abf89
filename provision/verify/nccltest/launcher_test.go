package nccltest

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

// TestFailureCauses: what NCCL printed about a failure is kept, every
// line of it, and the line naming the error leads the verdict, also ahead
// of the command's exit status.
func TestFailureCauses(t *testing.T) {
	r := parseFile(t, "all_reduce_perf-2xRTX5090-nccl-debug-info-cuda-failure.txt")
	if len(r) != 1 {
		t.Fatalf("%d runs", len(r))
	}
	run := r[0]
	if run.NCCLVersion != "2.25.1+cuda12.8" {
		t.Errorf("NCCL version from the INFO line: %q", run.NCCLVersion)
	}
	if run.Network != "Socket" {
		t.Errorf("network %q, want Socket (\"Using network Socket\")", run.Network)
	}
	if len(run.Causes) != 5 || !strings.Contains(run.Causes[0], "graph/search.cc:1135 NCCL WARN Could not find a path for pattern 4") {
		t.Errorf("causes %q, want the 4 graph/search warnings and the Cuda failure", run.Causes)
	}
	res := Result{Runs: r, ExitCode: 3, Failure: "exit status 3 (NCCL error)"}
	v := res.Judge(0)
	if v.Pass || len(v.Reasons) < 3 {
		t.Fatalf("verdict %+v", v)
	}
	if !strings.HasSuffix(v.Reasons[0], "enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'") {
		t.Errorf("first reason %q, want the Cuda failure WARN line", v.Reasons[0])
	}
	msg := strings.Join(v.Reasons, "; ")
	for _, want := range []string{"Test NCCL failure common.cu:392", "exit status 3 (NCCL error)", "Could not find a path for pattern 1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("reasons lack %q: %q", want, msg)
		}
	}
	if strings.Count(msg, "Could not find a path for pattern 4") != 1 {
		t.Errorf("the same warning from two ranks is repeated: %q", msg)
	}
	if len(v.Causes) != 6 {
		t.Errorf("verdict keeps %d causes, want every one (5 WARN + the Test NCCL failure): %q", len(v.Causes), v.Causes)
	}

	warnOnly := parseFile(t, "nccl-warn-only-nvls-cuda-failure-h800.txt")
	v = (Result{Runs: warnOnly, ExitCode: 1, Failure: "exit status 1 (internal error)"}).Judge(0)
	if v.Pass || !strings.Contains(v.Reasons[0], "transport/nvls.cc:158 NCCL WARN Cuda failure 1 'invalid argument'") {
		t.Errorf("WARN-only run: %+v", v)
	}
	if strings.Contains(strings.Join(v.Reasons, "; "), "no result rows") {
		t.Errorf("WARN-only run reported as no result rows: %q", v.Reasons)
	}

	// Standard error carries the warning (NCCL_DEBUG_FILE=/dev/stderr).
	stderr := []byte("node2:242431:242479 [5] transport/nvls.cc:158 NCCL WARN Cuda failure 1 'invalid argument'\nnode2:242431:242475 [1] NCCL INFO init.cc:1277 -> 1\n")
	res = Result{Runs: parseFile(t, "all_reduce_perf-2xRTX5090-pcie-nccl-failure.txt"), ExitCode: 3, Failure: "exit status 3 (NCCL error)", StderrCauses: Causes(stderr)}
	v = res.Judge(0)
	if len(res.StderrCauses) != 1 || !strings.Contains(v.Reasons[0], "NCCL WARN Cuda failure 1 'invalid argument'") {
		t.Errorf("stderr cause not leading: %q", v.Reasons)
	}
}
