//go:build cgo

package verify

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

type mockCase struct {
	mock   string
	model  string
	driver string
	nvlink NVLinkExpectation
	fm     bool
}

func mockCases() []mockCase {
	return []mockCase{
		{nvmlfacts.MockDGXA100, "A100", "550.54.15", NVLinkAllActive, true},
		{nvmlfacts.MockDGXH100, "H100", "550.54.15", NVLinkAllActive, true},
		{nvmlfacts.MockDGXH200, "H200", "550.54.15", NVLinkAllActive, true},
		{nvmlfacts.MockDGXB200, "B200", "560.28.03", NVLinkAllActive, true},
		{nvmlfacts.MockL40SPCIe, "L40S", "550.54.15", NVLinkNone, false},
	}
}

// expectationFor is the spec a healthy simulated node satisfies: every
// check kind is switched on.
func expectationFor(c mockCase) Expectation {
	on, off := true, false
	exp := Expectation{
		GPUCount: 8, GPUModel: c.model, DriverVersion: c.driver,
		PersistenceMode: &on, ECC: &on, NVLink: c.nvlink, MaxTemperatureC: 85, MIG: &off,
		NUMANode: map[int]int{}, NIC: map[int]NICExpectation{}, Peermem: &on, FabricManager: &c.fm,
	}
	for i := 0; i < 8; i++ {
		exp.NUMANode[i] = i / 4
		exp.NIC[i] = NICExpectation{NIC: fmt.Sprintf("mlx5_%d", i)}
	}
	return exp
}

func collectMock(t testing.TB, name string, faults ...nvmlfacts.Fault) *nvmlfacts.Report {
	t.Helper()
	m, err := nvmlfacts.NewMock(name, faults...)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := nvmlfacts.Collect(context.Background(), m, nvmlfacts.Options{NICs: m.NICs(), Topology: m, XIDWindow: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func failed(results []CheckResult) []string {
	var ids []string
	for _, r := range results {
		if r.Status == StatusFail || r.Status == StatusError {
			ids = append(ids, r.ID)
		}
	}
	sort.Strings(ids)
	return ids
}

func healthyHost(c mockCase) HostFacts {
	on := true
	return HostFacts{FabricManagerActive: &c.fm, PeermemLoaded: &on}
}

// TestFaultsFailExactlyTheirCheck plants each fault in each simulated
// system and requires exactly the matching check to fail; the healthy
// system must pass every check.
func TestFaultsFailExactlyTheirCheck(t *testing.T) {
	faults := []struct {
		fault nvmlfacts.Fault
		want  string
	}{
		{nvmlfacts.Fault{Kind: nvmlfacts.FaultDropGPU, GPU: 7}, "nvml.gpu_count"},
		{nvmlfacts.Fault{Kind: nvmlfacts.FaultECCOff, GPU: 2}, "nvml.ecc_mode[gpu2]"},
		{nvmlfacts.Fault{Kind: nvmlfacts.FaultUncorrectableECC, GPU: 3}, "nvml.ecc_uncorrectable[gpu3]"},
		{nvmlfacts.Fault{Kind: nvmlfacts.FaultRemapPending, GPU: 1}, "nvml.row_remap[gpu1]"},
		{nvmlfacts.Fault{Kind: nvmlfacts.FaultRemapFailure, GPU: 6}, "nvml.row_remap[gpu6]"},
		{nvmlfacts.Fault{Kind: nvmlfacts.FaultPCIeX8, GPU: 4}, "nvml.pcie_link[gpu4]"},
		{nvmlfacts.Fault{Kind: nvmlfacts.FaultPCIeGenDown, GPU: 5}, "nvml.pcie_link[gpu5]"},
		{nvmlfacts.Fault{Kind: nvmlfacts.FaultNVLinkDown, GPU: 6}, "nvml.nvlink[gpu6]"},
		{nvmlfacts.Fault{Kind: nvmlfacts.FaultWrongNUMA, GPU: 0}, "nvml.numa_node[gpu0]"},
		{nvmlfacts.Fault{Kind: nvmlfacts.FaultNICAcrossSYS, GPU: 3}, "nvml.gpu_nic[gpu3]"},
		{nvmlfacts.Fault{Kind: nvmlfacts.FaultPersistenceOff, GPU: 2}, "nvml.persistence_mode[gpu2]"},
		{nvmlfacts.Fault{Kind: nvmlfacts.FaultHot, GPU: 1}, "nvml.temperature[gpu1]"},
		{nvmlfacts.Fault{Kind: nvmlfacts.FaultThermalSlowdown, GPU: 1}, "nvml.throttle[gpu1]"},
		{nvmlfacts.Fault{Kind: nvmlfacts.FaultXID, GPU: 0, Value: 79}, "nvml.xid"},
	}
	for _, c := range mockCases() {
		exp := expectationFor(c)
		t.Run(c.mock+"/healthy", func(t *testing.T) {
			res := Check(exp, collectMock(t, c.mock), healthyHost(c))
			for _, r := range res {
				if r.Status != StatusPass {
					t.Errorf("%s: %s (%s)", r.ID, r.Status, r.Message)
				}
			}
			// 1 facts + count + model + driver + xid + 9 per-GPU kinds
			// (persistence, ecc mode, ecc errors, row remap, pcie,
			// nvlink, temperature, throttle, mig) x 8 + numa x 8 + nic
			// x 8 + fabric manager + peermem.
			if want := 5 + 9*8 + 8 + 8 + 2; len(res) != want {
				t.Errorf("%d checks, want %d", len(res), want)
			}
		})
		for _, f := range faults {
			if f.fault.Kind == nvmlfacts.FaultNVLinkDown && c.nvlink == NVLinkNone {
				continue // no NVLink to take down on a PCIe-only box
			}
			t.Run(c.mock+"/"+string(f.fault.Kind), func(t *testing.T) {
				got := failed(Check(exp, collectMock(t, c.mock, f.fault), healthyHost(c)))
				if diff := cmp.Diff([]string{f.want}, got); diff != "" {
					t.Errorf("failed checks (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestHostAndNVMLErrors(t *testing.T) {
	c := mockCases()[1]
	exp := expectationFor(c)
	off := false
	rep := collectMock(t, c.mock)
	got := failed(Check(exp, rep, HostFacts{FabricManagerActive: &off, PeermemLoaded: &off}))
	if diff := cmp.Diff([]string{"host.fabric_manager", "host.peermem"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Unknown host facts are errors, not passes.
	got = failed(Check(exp, rep, HostFacts{}))
	if diff := cmp.Diff([]string{"host.fabric_manager", "host.peermem"}, got); diff != "" {
		t.Errorf("unknown host facts (-want +got):\n%s", diff)
	}
	res := Check(exp, nil, HostFacts{NVMLError: "NVML: libnvidia-ml.so.1 not found", FabricManagerActive: &c.fm, PeermemLoaded: &c.fm})
	if res[0].ID != "nvml.facts" || res[0].Status != StatusFail || !strings.Contains(res[0].Message, "libnvidia-ml") {
		t.Errorf("no NVML: %+v", res[0])
	}
	if got := failed(res); len(got) != 1 {
		t.Errorf("without NVML only nvml.facts may fail: %v", got)
	}
}

func TestIdleGPUKeepsPCIePass(t *testing.T) {
	// An idle GPU reports Gen1 with the gpu_idle reason; its negotiated
	// maximum is what counts.
	g := nvmlfacts.GPU{Index: 0, BusID: "00000000:18:00.0",
		PCIe:     &nvmlfacts.PCIeLink{CurrentGen: 1, MaxGen: 5, GPUMaxGen: 5, CurrentWidth: 16, MaxWidth: 16},
		Throttle: &nvmlfacts.Throttle{Mask: 1, Active: []string{nvmlfacts.ThrottleGPUIdle}}}
	if r := checkPCIe(Expectation{}, &g); r.Status != StatusPass {
		t.Errorf("idle: %+v", r)
	}
	g.Throttle = &nvmlfacts.Throttle{Active: []string{}}
	if r := checkPCIe(Expectation{}, &g); r.Status != StatusFail || !strings.Contains(r.Message, "00000000:18:00.0") {
		t.Errorf("busy at Gen1: %+v", r)
	}
}

func TestNCCLChecks(t *testing.T) {
	c := mockCases()[1]
	exp := Expectation{GPUModel: "H100", Interconnect: InterconnectNVSwitch, GPUCount: 8, NCCL: []NCCLExpectation{
		{Name: "spec_floor", Command: "all_reduce_perf -b 128M -e 4G -g 8", MinBusBWGBps: 450},
		{Name: "high_floor", Command: "all_reduce_perf -b 128M -e 4G -g 8", MinBusBWGBps: 480},
		// Catalogue floor (460 GB/s at 16G) but the run stops at 4G.
		{Name: "catalogue", Command: "all_reduce_perf -b 128M -e 4G -g 8"},
		{Name: "not_run", Command: "all_reduce_perf -g 8"},
	}}
	runs := parseFixture(t, "all_reduce_perf-8xH100-nvswitch-1node.txt")
	res := nccltest.Result{Runs: runs}
	extra := HostFacts{NCCL: map[string]nccltest.Result{"spec_floor": res, "high_floor": res, "catalogue": res}}
	got := map[string]CheckResult{}
	for _, r := range Check(exp, collectMock(t, c.mock), extra) {
		got[r.ID] = r
	}
	want := map[string]Status{"nccl.spec_floor": StatusPass, "nccl.high_floor": StatusFail, "nccl.catalogue": StatusError, "nccl.not_run": StatusSkip}
	for id, st := range want {
		if got[id].Status != st {
			t.Errorf("%s: %+v, want %s", id, got[id], st)
		}
	}
	if r := got["nccl.spec_floor"]; r.Observed != "busbw 473.60 GB/s at 4G" {
		t.Errorf("observed %q", r.Observed)
	}
	if r := got["nccl.catalogue"]; !strings.Contains(r.Expected, "460.00") || !strings.Contains(r.Message, "-e 16G") {
		t.Errorf("catalogue: %+v", r)
	}
}
