//go:build cgo

package verify

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/gres"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// hgxBusIDs are the GPU addresses of modules/hgx-h100-8gpu, which the
// dgxh100 mock's layout follows.
var hgxBusIDs = map[int]string{0: "0000:1b:00.0", 1: "0000:43:00.0", 2: "0000:52:00.0", 3: "0000:61:00.0",
	4: "0000:9d:00.0", 5: "0000:c3:00.0", 6: "0000:d1:00.0", 7: "0000:df:00.0"}

// TestGPUsIdentifiedByBusID: after GPU 4 (0000:9d:00.0) falls off the bus,
// NVML renumbers c3, d1 and df as 4, 5 and 6. Judged by bus id, only
// nvml.gpu_count fails, naming the missing GPU's address; gpu4's own
// checks are not run and say why; gpu5..7 keep their identity (their NIC
// pairs pass) and a fault on c3 is reported on gpu5, with NVML's index
// kept beside it.
func TestGPUsIdentifiedByBusID(t *testing.T) {
	c := mockCases()[1] // dgxh100
	exp := expectationFor(t, c)
	exp.GPUBusID = hgxBusIDs
	faults := []nvmlfacts.Fault{{Kind: nvmlfacts.FaultDropGPU, GPU: -1, BusID: "0000:9d:00.0"}}
	res := Check(exp, collectMock(t, c.mock, faults...), healthyHost(c))
	if diff := cmp.Diff([]string{"nvml.gpu_count"}, failed(res)); diff != "" {
		t.Errorf("failed checks (-want +got):\n%s", diff)
	}
	byID := map[string]CheckResult{}
	for _, r := range res {
		byID[r.ID] = r
	}
	if m := byID["nvml.gpu_count"].Message; !strings.Contains(m, "missing: gpu4 (00000000:9D:00.0)") {
		t.Errorf("gpu_count does not name the missing GPU: %q", m)
	}
	for _, id := range []string{"nvml.gpu_nic[gpu4]", "nvml.numa_node[gpu4]"} {
		if r := byID[id]; r.Status != StatusSkip || !strings.Contains(r.Message, "not run: gpu4 (00000000:9D:00.0) is not enumerated by NVML") {
			t.Errorf("%s: %s %q", id, r.Status, r.Message)
		}
	}
	if _, ok := byID["nvml.pcie_link[gpu4]"]; ok {
		t.Error("a per-GPU check judged a GPU NVML does not see")
	}
	for _, id := range []string{"nvml.gpu_nic[gpu7]", "nvml.pcie_link[gpu7]"} {
		if r := byID[id]; r.Status != StatusPass {
			t.Errorf("%s: %s %q", id, r.Status, r.Message)
		}
	}
	if g := byID["nvml.pcie_link[gpu5]"].GPU; g == nil || !strings.EqualFold(g.BusID, "00000000:C3:00.0") || g.NVMLIndex == nil || *g.NVMLIndex != 4 {
		t.Errorf("gpu5's identity: %+v", g)
	}

	// A fault on c3 fails gpu5's check, not gpu4's.
	faults = append(faults, nvmlfacts.Fault{Kind: nvmlfacts.FaultPCIeX8, GPU: -1, BusID: "0000:c3:00.0"})
	res = Check(exp, collectMock(t, c.mock, faults...), healthyHost(c))
	if diff := cmp.Diff([]string{"nvml.gpu_count", "nvml.pcie_link[gpu5]"}, failed(res)); diff != "" {
		t.Errorf("failed checks (-want +got):\n%s", diff)
	}

	// Without bus ids in the spec NVML's numbering is all there is: the
	// old behaviour, which blamed the renumbered GPUs' NIC pairs.
	exp.GPUBusID = nil
	res = Check(exp, collectMock(t, c.mock, faults[0]), healthyHost(c))
	if got := failed(res); len(got) < 2 || got[0] != "nvml.gpu_count" {
		t.Errorf("without bus ids: %v", got)
	}
}

// TestStrangerGPUKeepsItsOwnName: a GPU at an address the hardware block
// does not declare is judged under an index the spec does not use, and a
// declared GPU that is absent is still reported missing.
func TestStrangerGPUKeepsItsOwnName(t *testing.T) {
	exp := Expectation{KB: testKB, GPUCount: 2, GPUBusID: map[int]string{0: "0000:1b:00.0", 1: "0000:43:00.0"}}
	rep := &nvmlfacts.Report{GPUs: []nvmlfacts.GPU{{Index: 0, BusID: "00000000:1B:00.0"}, {Index: 1, BusID: "00000000:99:00.0"}}}
	got, id := identify(exp, rep)
	if got.GPUs[0].Index != 0 || got.GPUs[1].Index != 2 {
		t.Errorf("indexes %d, %d; want 0 and 2 (1 is the spec's 0000:43:00.0)", got.GPUs[0].Index, got.GPUs[1].Index)
	}
	if id.missingText() != "gpu1 (00000000:43:00.0)" {
		t.Errorf("missing %q", id.missingText())
	}
	if rep.GPUs[1].Index != 1 {
		t.Error("identify changed the report it was given")
	}
}

// TestBindingAndGRESFollowBusID (issue 27): bind.process and slurm.gres
// were judged by NVML's numbering, which shifts when GPU 4 (0000:9d:00.0)
// falls off the bus. Matched by bus id: the process NVML lists on its GPU
// 4 (0000:c3:00.0) is judged as gpu5's, gpu4's own checks are not run and
// say why, and slurmd's GPUs are matched by the minor number NVML gives
// each GPU, so nothing but nvml.gpu_count fails, whether the minors kept
// their boot-time numbers (the GPU fell off a running node) or the driver
// numbered the seven GPUs left 0-6 (the node rebooted without it).
func TestBindingAndGRESFollowBusID(t *testing.T) {
	c := mockCases()[1] // dgxh100: GPUs 0-3 on NUMA node 0, 4-7 on node 1
	exp := expectationFor(t, c)
	exp.GPUBusID = hgxBusIDs
	exp.Processes = true
	exp.SlurmAutodetect = true
	node0, node1 := "0-55,112-167", "56-111,168-223"
	host := healthyHost(c)
	host.Facts = &facts.Node{NUMA: []facts.NUMANode{{ID: 0, CPUs: node0}, {ID: 1, CPUs: node1}}}
	rep := collectMock(t, c.mock, nvmlfacts.Fault{Kind: nvmlfacts.FaultDropGPU, GPU: -1, BusID: "0000:9d:00.0"})
	// NVML's index 4 is 0000:c3:00.0, spec gpu5, on NUMA node 1.
	rep.Processes = &nvmlfacts.Processes{List: []nvmlfacts.Process{
		{GPU: 3, PID: 300, Name: "python3", CPUsAllowed: node0},
		{GPU: 4, PID: 500, Name: "python3", CPUsAllowed: node1},
	}}
	gpuLine := func(minor int, cores string) gres.Detected {
		return gres.Detected{Name: "gpu", File: "/dev/nvidia" + strconv.Itoa(minor), Cores: cores}
	}
	// slurmd names each GPU NVML enumerates by its device minor; Slurm
	// cores 0-55 are NUMA node 0's, 56-111 node 1's.
	running := &SlurmdGRES{}
	for _, m := range []int{0, 1, 2, 3, 5, 6, 7} {
		cores := "0-55"
		if m >= 4 {
			cores = "56-111"
		}
		running.GRES = append(running.GRES, gpuLine(m, cores))
	}
	rebooted := &SlurmdGRES{}
	for m := range 7 {
		cores := "0-55"
		if m >= 4 {
			cores = "56-111"
		}
		rebooted.GRES = append(rebooted.GRES, gpuLine(m, cores))
	}
	renumbered := *rep
	renumbered.GPUs = slices.Clone(rep.GPUs)
	for i := range renumbered.GPUs {
		m := renumbered.GPUs[i].Index
		renumbered.GPUs[i].MinorNumber = &m
	}
	for _, tc := range []struct {
		name   string
		rep    *nvmlfacts.Report
		slurmd *SlurmdGRES
	}{
		{"fell off a running node", rep, running},
		{"rebooted without it", &renumbered, rebooted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := host
			host.Slurmd = tc.slurmd
			res := Check(exp, tc.rep, host)
			if diff := cmp.Diff([]string{"nvml.gpu_count"}, failed(res)); diff != "" {
				t.Errorf("failed checks (-want +got):\n%s", diff)
			}
			byID := map[string]CheckResult{}
			for _, r := range res {
				byID[r.ID] = r
			}
			for _, id := range []string{"bind.process[gpu4]", "slurm.gres[gpu4]"} {
				if r, ok := byID[id]; !ok || r.Status != StatusSkip || !strings.Contains(r.Message, "not run: gpu4 (00000000:9D:00.0) is not enumerated by NVML") {
					t.Errorf("%s: %+v", id, r)
				}
			}
			if r := byID["bind.process[gpu5]"]; r.Status != StatusPass || !strings.Contains(r.Observed, "pid 500") || r.Expected != "CPUs within "+node1 {
				t.Errorf("gpu5's process: %+v", r)
			}
			if r := byID["bind.process[gpu3]"]; r.Status != StatusPass || !strings.Contains(r.Observed, "pid 300") {
				t.Errorf("gpu3's process: %+v", r)
			}
			if r := byID["bind.process[gpu7]"]; r.Status != StatusSkip || r.Message != "no compute process on this GPU" {
				t.Errorf("gpu7: %+v", r)
			}
			for i := 0; i < 8; i++ {
				if i == 4 {
					continue
				}
				if r := byID[CheckSlurmGRES.GPU(i)]; r.Status != StatusPass {
					t.Errorf("slurm.gres[gpu%d]: %+v", i, r)
				}
			}
			// gpu5 is 0000:c3:00.0 whatever its file.
			want := "/dev/nvidia5"
			if tc.slurmd == rebooted {
				want = "/dev/nvidia4"
			}
			if r := byID["slurm.gres[gpu5]"]; !strings.HasPrefix(r.Observed, want+" ") {
				t.Errorf("slurm.gres[gpu5] observed %q, want %s", r.Observed, want)
			}
		})
	}
}
