package verify

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/gres"
)

// TestCheckSlurmGRES judges what slurmd -G reports on an AutoDetect node
// against the binds: GPU 0 on NUMA node 0, GPU 1 on node 1, on a host
// whose hyperthreads follow its cores (Slurm cores 0-3 and 4-7).
func TestCheckSlurmGRES(t *testing.T) {
	host := &facts.Node{NUMA: []facts.NUMANode{{ID: 0, CPUs: "0-3,8-11"}, {ID: 1, CPUs: "4-7,12-15"}}}
	exp := Expectation{KB: testKB, SlurmAutodetect: true, NUMANode: map[int]int{0: 0, 1: 1}}
	gpu := func(file, cores string) gres.Detected {
		return gres.Detected{Name: "gpu", Type: "nvidia_h100_80gb_hbm3", File: file, Cores: cores}
	}
	tests := []struct {
		name   string
		exp    Expectation
		extra  HostFacts
		status []Status
		// message is part of GPU 1's message.
		message string
	}{
		{name: "agrees", exp: exp, extra: HostFacts{Facts: host, Slurmd: &SlurmdGRES{GRES: []gres.Detected{gpu("/dev/nvidia0", "0-3"), gpu("/dev/nvidia1", "4-7")}}},
			status: []Status{StatusPass, StatusPass}},
		// NVML puts GPU 1 on the first socket: jobs would not follow the spec.
		{name: "other cores", exp: exp, extra: HostFacts{Facts: host, Slurmd: &SlurmdGRES{GRES: []gres.Detected{gpu("/dev/nvidia0", "0-3"), gpu("/dev/nvidia1", "0-3")}}},
			status: []Status{StatusPass, StatusFail}, message: `slurmd ties /dev/nvidia1 to cores "0-3", the spec binds GPU 1 to NUMA node 1 (Slurm cores 4-7)`},
		{name: "GPU not detected", exp: exp, extra: HostFacts{Facts: host, Slurmd: &SlurmdGRES{GRES: []gres.Detected{gpu("/dev/nvidia0", "0-3")}, Errors: []string{"NVML: GPU 1 lost"}}},
			status: []Status{StatusPass, StatusFail}, message: "slurmd detects no GPU with File=/dev/nvidia1: NVML: GPU 1 lost"},
		{name: "slurmd missing", exp: exp, extra: HostFacts{Facts: host, Slurmd: &SlurmdGRES{Failure: "slurmd -G exited 127: slurmd is not installed"}},
			status: []Status{StatusError, StatusError}, message: "slurmd is not installed"},
		{name: "no probe facts", exp: exp, extra: HostFacts{Slurmd: &SlurmdGRES{}},
			status: []Status{StatusError, StatusError}, message: "NUMA nodes are unknown"},
		// Lines instead of AutoDetect: the file is compared by spec.gres_conf.
		{name: "not autodetect", exp: Expectation{KB: testKB, NUMANode: exp.NUMANode}, extra: HostFacts{Facts: host}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkSlurmGRES(tt.exp, nil, gpuIdentity{}, tt.extra)
			if len(got) != len(tt.status) {
				t.Fatalf("got %d results, want %d: %+v", len(got), len(tt.status), got)
			}
			for i, r := range got {
				if r.ID != CheckSlurmGRES.GPU(i) || r.Status != tt.status[i] {
					t.Errorf("result %d: %+v, want %s %s", i, r, CheckSlurmGRES.GPU(i), tt.status[i])
				}
			}
			if tt.message != "" && !strings.Contains(got[1].Message, tt.message) {
				t.Errorf("message %q, want it to contain %q", got[1].Message, tt.message)
			}
		})
	}
}
