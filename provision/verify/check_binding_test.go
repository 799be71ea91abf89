package verify

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/bind"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/spec"
)

// bindSpec binds GPU 0 to NUMA node 0 and GPU 1 to node 1, each paired
// with an RDMA NIC, and asks for NCCL's environment in nccl.conf.
const bindSpec = `
node "n" {
  hosts = ["gpu1"]
  numa {
    bind {
      gpus = [0]
      node = 0
    }
    bind {
      gpus = [1]
      node = 1
    }
  }
  affinity {
    gpu_nic  = { 0 = "mlx5_0", 1 = "mlx5_1" }
    nccl_env = true
  }
}`

func loadSpecNode(t testing.TB, src string) *spec.Node {
	t.Helper()
	cfg, diags := spec.LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(src)}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return cfg.Nodes[0]
}

// boundHost is a two-node host on which apply recorded n's binding.
func boundHost(t testing.TB, n *spec.Node) *facts.Node {
	t.Helper()
	f := &facts.Node{
		NUMA:         []facts.NUMANode{{ID: 0, CPUs: "0-3"}, {ID: 1, CPUs: "4-7"}},
		RDMA:         []facts.RDMADevice{{Name: "mlx5_0"}, {Name: "mlx5_1"}, {Name: "mlx5_10"}},
		ManagedFiles: map[string]facts.File{},
		NCCLConf:     &facts.File{Content: "NCCL_IB_HCA=mlx5_0,mlx5_1\n"},
	}
	b, err := bind.Compute(n, bind.FactsCPULists(f))
	if err != nil {
		t.Fatal(err)
	}
	f.ManagedFiles[bind.File] = facts.NewFile(b.Marshal())
	return f
}

func byID(results []CheckResult, id string) (CheckResult, bool) {
	for _, r := range results {
		if r.ID == id {
			return r, true
		}
	}
	return CheckResult{}, false
}

func TestBindingFileCheck(t *testing.T) {
	n := loadSpecNode(t, bindSpec)
	tests := map[string]struct {
		host       func(f *facts.Node)
		status     Status
		ncclStatus Status
		message    string
	}{
		"recorded":      {status: StatusPass, ncclStatus: StatusPass},
		"never applied": {host: func(f *facts.Node) { delete(f.ManagedFiles, bind.File) }, status: StatusFail, ncclStatus: StatusPass, message: "is not on the node"},
		// SMT turned off after apply: the file binds CPUs the node no longer has.
		"cpus changed since apply": {host: func(f *facts.Node) { f.NUMA[1].CPUs = "4-5" }, status: StatusFail, ncclStatus: StatusPass,
			message: `gpu1: the file binds NUMA node 1 (CPUs "4-7"), the spec node 1 whose CPUs are "4-5" on this host now`},
		"edited by hand": {host: func(f *facts.Node) {
			f.ManagedFiles[bind.File] = facts.NewFile(strings.Replace(f.ManagedFiles[bind.File].Content, `"mlx5_1"`, `"mlx5_10"`, 1))
		}, status: StatusFail, ncclStatus: StatusPass, message: `gpu1: the file pairs NIC "mlx5_10", the spec "mlx5_1"`},
		"not json":         {host: func(f *facts.Node) { f.ManagedFiles[bind.File] = facts.NewFile("{") }, status: StatusFail, ncclStatus: StatusPass, message: "not a gpuform binding file"},
		"nic not on host":  {host: func(f *facts.Node) { f.RDMA = f.RDMA[:1] }, status: StatusFail, ncclStatus: StatusPass, message: "gpu1's NIC mlx5_1 is not an RDMA device of this host"},
		"numa node lacked": {host: func(f *facts.Node) { f.NUMA = f.NUMA[:1] }, status: StatusFail, message: "does not fit this host: GPU 1 is bound to NUMA node 1"},
		// NCCL's exact form leaves mlx5_1 out of "=mlx5_0,mlx5_10".
		"nccl.conf leaves a nic out": {host: func(f *facts.Node) { f.NCCLConf.Content = "NCCL_IB_HCA==mlx5_0,mlx5_10\n" }, status: StatusPass, ncclStatus: StatusFail},
		"nccl.conf excludes a nic":   {host: func(f *facts.Node) { f.NCCLConf.Content = "NCCL_IB_HCA=^mlx5_1\n" }, status: StatusPass, ncclStatus: StatusFail},
		// Without NCCL_IB_HCA NCCL uses every NIC: nothing to judge.
		"nccl.conf without the key": {host: func(f *facts.Node) { f.NCCLConf.Content = "NCCL_DEBUG=INFO\n" }, status: StatusPass},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := boundHost(t, n)
			if tc.host != nil {
				tc.host(f)
			}
			got := Check(Expectation{KB: testKB, Spec: n}, nil, HostFacts{Facts: f})
			r, ok := byID(got, string(CheckBindingFile))
			if !ok || r.Status != tc.status || !strings.Contains(r.Message, tc.message) {
				t.Errorf("bind.file: %+v, want %s with %q", r, tc.status, tc.message)
			}
			nc, ok := byID(got, string(CheckBindingNCCLConf))
			if tc.ncclStatus == "" {
				if ok {
					t.Errorf("bind.nccl_conf emitted: %+v", nc)
				}
			} else if !ok || nc.Status != tc.ncclStatus {
				t.Errorf("bind.nccl_conf: %+v, want %s", nc, tc.ncclStatus)
			}
		})
	}
	// A node without binds emits neither.
	if got := checkBinding(Expectation{KB: testKB, Spec: specNode(t)}, boundHost(t, n)); len(got) != 0 {
		t.Errorf("node without binds: %+v", got)
	}
}

// twoGPUReport is NVML's view of a two-GPU host whose GPU i sits on NUMA
// node i, with procs as its compute processes.
func twoGPUReport(procs ...nvmlfacts.Process) *nvmlfacts.Report {
	return &nvmlfacts.Report{Source: nvmlfacts.SourceNVML, GPUs: []nvmlfacts.GPU{
		{Index: 0, CPUAffinity: "0-3"}, {Index: 1, CPUAffinity: "4-7"},
	}, Processes: &nvmlfacts.Processes{List: procs}}
}

func TestProcessBinding(t *testing.T) {
	n := loadSpecNode(t, bindSpec)
	bound := func(gpu int, cpus, hca string) nvmlfacts.Process {
		return nvmlfacts.Process{GPU: gpu, PID: 100 + gpu, Name: "python3", CPUsAllowed: cpus, Env: map[string]string{"NCCL_IB_HCA": hca}}
	}
	tests := map[string]struct {
		procs   []nvmlfacts.Process
		status  [2]Status
		message string
	}{
		"bound":   {procs: []nvmlfacts.Process{bound(0, "0-3", "=mlx5_0"), bound(1, "4-5", "=mlx5_1")}, status: [2]Status{StatusPass, StatusPass}},
		"no jobs": {status: [2]Status{StatusSkip, StatusSkip}},
		// The launcher's default: every CPU of the machine.
		"unbound cpus": {procs: []nvmlfacts.Process{bound(1, "0-7", "=mlx5_1")}, status: [2]Status{StatusSkip, StatusFail},
			message: "pid 101 (python3) may run on CPUs 0-7, 4 of them outside its GPU's NUMA node (CPUs 4-7)"},
		"no nic variable": {procs: []nvmlfacts.Process{{GPU: 0, PID: 7, CPUsAllowed: "0-3", Env: map[string]string{}}}, status: [2]Status{StatusFail, StatusSkip},
			message: "pid 7 has no NCCL_IB_HCA"},
		// A prefix mlx5_1 also selects mlx5_10 on this host.
		"prefix selects two nics": {procs: []nvmlfacts.Process{bound(1, "4-7", "mlx5_1")}, status: [2]Status{StatusSkip, StatusFail},
			message: "NCCL_IB_HCA=mlx5_1, which selects mlx5_1, mlx5_10, not its GPU's mlx5_1 alone"},
		"wrong ucx device": {procs: []nvmlfacts.Process{{GPU: 0, PID: 8, CPUsAllowed: "0", Env: map[string]string{"NCCL_IB_HCA": "=mlx5_0", "UCX_NET_DEVICES": "mlx5_1:1"}}},
			status: [2]Status{StatusFail, StatusSkip}, message: "UCX_NET_DEVICES=mlx5_1:1, not its GPU's mlx5_0"},
		// Exited between NVML's list and the read: an error, never a pass.
		"exited": {procs: []nvmlfacts.Process{{GPU: 0, PID: 9, StatusError: "process 9 exited", EnvError: "process 9 exited"}}, status: [2]Status{StatusError, StatusSkip},
			message: "pid 9: process 9 exited"},
		"environ not readable": {procs: []nvmlfacts.Process{{GPU: 0, PID: 10, CPUsAllowed: "0-3", EnvError: "/proc/10/environ: permission denied"}}, status: [2]Status{StatusError, StatusSkip},
			message: "permission denied"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := checkProcesses(Expectation{KB: testKB, Spec: n, Processes: true}, twoGPUReport(tc.procs...), gpuIdentity{}, boundHost(t, n))
			if len(got) != 2 {
				t.Fatalf("%d results: %+v", len(got), got)
			}
			var msgs []string
			for i, r := range got {
				if r.ID != CheckProcessBinding.GPU(i) || r.Status != tc.status[i] {
					t.Errorf("%s: %s, want %s (%s)", r.ID, r.Status, tc.status[i], r.Message)
				}
				msgs = append(msgs, r.Message)
			}
			if !strings.Contains(strings.Join(msgs, "\n"), tc.message) {
				t.Errorf("messages %q do not say %q", msgs, tc.message)
			}
		})
	}
	// The nvidia-smi fallback lists no processes: -processes asked for
	// them, so the check could not be made: an error saying why.
	rep := twoGPUReport()
	rep.Processes, rep.Source = nil, nvmlfacts.SourceNvidiaSMI
	for _, r := range checkProcesses(Expectation{KB: testKB, Spec: n, Processes: true}, rep, gpuIdentity{}, boundHost(t, n)) {
		if r.Status != StatusError || !strings.Contains(r.Message, "nvidia-smi does not list them") {
			t.Errorf("fallback: %+v", r)
		}
	}
	// A GPU nothing places (no bind, no NIC, no NVML affinity): skipped
	// with the reason, not passed.
	rep = twoGPUReport(bound(0, "0-7", ""))
	rep.GPUs[0].CPUAffinity = ""
	plain := loadSpecNode(t, `node "n" {
  hosts = ["gpu1"]
}`)
	if got := checkProcesses(Expectation{KB: testKB, Spec: plain, Processes: true}, rep, gpuIdentity{}, boundHost(t, n)); len(got) != 2 || got[0].Status != StatusSkip || !strings.Contains(got[0].Message, "nothing to judge") || got[1].Status != StatusSkip {
		t.Errorf("unplaced GPU: %+v", got)
	}
	// Without -processes nothing is emitted.
	if got := checkProcesses(Expectation{KB: testKB, Spec: n}, twoGPUReport(bound(0, "0-7", "")), gpuIdentity{}, boundHost(t, n)); len(got) != 0 {
		t.Errorf("without -processes: %+v", got)
	}
}
