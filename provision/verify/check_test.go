//go:build cgo

package verify

import (
	"context"
	"fmt"
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
	numa   []int // NUMA node per GPU, from the hardware module the mock follows
	pcie   bool  // the platform reports a PCIe link
	nics   bool
}

func mockCases() []mockCase {
	twoSockets := []int{0, 0, 0, 0, 1, 1, 1, 1}
	return []mockCase{
		// modules/dgx-a100: NPS4, GPU pairs on NUMA 3, 1, 7, 5.
		{nvmlfacts.MockDGXA100, "A100", "550.54.15", NVLinkAllActive, true, []int{3, 3, 1, 1, 7, 7, 5, 5}, true, true},
		{nvmlfacts.MockDGXH100, "H100", "550.54.15", NVLinkAllActive, true, twoSockets, true, true},
		{nvmlfacts.MockDGXH200, "H200", "550.54.15", NVLinkAllActive, true, twoSockets, true, true},
		{nvmlfacts.MockDGXB200, "B200", "560.28.03", NVLinkAllActive, true, twoSockets, true, true},
		{nvmlfacts.MockL40SPCIe, "L40S", "550.54.15", NVLinkNone, false, twoSockets, true, true},
		// One superchip: no PCIe link to judge, no NVLink peers, no NICs.
		{nvmlfacts.MockGH200, "GH200", "550.54.15", NVLinkNone, false, []int{0}, false, false},
	}
}

// expectationFor is the spec a healthy simulated node satisfies: every
// check kind is switched on.
func expectationFor(t testing.TB, c mockCase) Expectation {
	on, off := true, false
	exp := Expectation{
		GPUCount: len(c.numa), GPUModel: c.model, DriverVersion: c.driver,
		PersistenceMode: &on, ECC: &on, NVLink: c.nvlink, MaxTemperatureC: 85, MIG: &off,
		NUMANode: map[int]int{}, NIC: map[int]NICExpectation{}, Peermem: &on, FabricManager: &c.fm,
	}
	for i, n := range c.numa {
		exp.NUMANode[i] = n
	}
	if c.nics {
		m, err := nvmlfacts.NewMock(c.mock)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range m.PairedNICs() {
			var allowed []nvmlfacts.Level
			if p.Level == nvmlfacts.LevelNode {
				// Direct-attach PCIe boxes have no switch: the NIC on
				// the GPU's own socket is the best there is.
				allowed = []nvmlfacts.Level{nvmlfacts.LevelNode}
			}
			exp.NIC[i] = NICExpectation{NIC: p.NIC, Allowed: allowed}
		}
		if len(exp.NIC) != len(c.numa) {
			t.Fatalf("%s: %d GPUs paired with a NIC", c.mock, len(exp.NIC))
		}
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

func healthyHost(c mockCase) HostFacts {
	on := true
	return HostFacts{FabricManagerActive: &c.fm, PeermemLoaded: &on}
}

// TestFaultsFailExactlyTheirCheck plants each fault in each simulated
// system and requires exactly the matching check to fail; the healthy
// system must pass every check.
func TestFaultsFailExactlyTheirCheck(t *testing.T) {
	faults := []struct {
		kind nvmlfacts.FaultKind
		gpu  int
		want string // %d is the GPU index
		// needs says which platform feature the fault acts on.
		needs string
	}{
		{nvmlfacts.FaultDropGPU, 7, "nvml.gpu_count", ""},
		{nvmlfacts.FaultECCOff, 2, "nvml.ecc_mode[gpu%d]", ""},
		{nvmlfacts.FaultUncorrectableECC, 3, "nvml.ecc_uncorrectable[gpu%d]", ""},
		{nvmlfacts.FaultRemapPending, 1, "nvml.row_remap[gpu%d]", ""},
		{nvmlfacts.FaultRemapFailure, 6, "nvml.row_remap[gpu%d]", ""},
		{nvmlfacts.FaultPCIeX8, 4, "nvml.pcie_link[gpu%d]", "pcie"},
		{nvmlfacts.FaultPCIeGenDown, 5, "nvml.pcie_link[gpu%d]", "pcie"},
		{nvmlfacts.FaultNVLinkDown, 6, "nvml.nvlink[gpu%d]", "nvlink"},
		{nvmlfacts.FaultWrongNUMA, 0, "nvml.numa_node[gpu%d]", ""},
		{nvmlfacts.FaultNICAcrossSYS, 3, "nvml.gpu_nic[gpu%d]", "nics"},
		{nvmlfacts.FaultPersistenceOff, 2, "nvml.persistence_mode[gpu%d]", ""},
		{nvmlfacts.FaultHot, 1, "nvml.temperature[gpu%d]", ""},
		{nvmlfacts.FaultThermalSlowdown, 1, "nvml.throttle[gpu%d]", ""},
		{nvmlfacts.FaultXID, 0, "nvml.xid", ""},
	}
	for _, c := range mockCases() {
		exp := expectationFor(t, c)
		t.Run(c.mock+"/healthy", func(t *testing.T) {
			res := Check(exp, collectMock(t, c.mock), healthyHost(c))
			for _, r := range res {
				// A platform without a PCIe link to the GPU (GH200's
				// NVLink-C2C) skips that check; nothing else may not pass.
				if r.Status != StatusPass && !(r.Status == StatusSkip && !c.pcie && strings.HasPrefix(r.ID, "nvml.pcie_link[")) {
					t.Errorf("%s: %s (%s)", r.ID, r.Status, r.Message)
				}
			}
			// facts + count + model + driver + xid, 9 per-GPU kinds
			// (persistence, ecc mode, ecc errors, row remap, pcie, nvlink,
			// temperature, throttle, mig), numa and nic per GPU, fabric
			// manager and peermem.
			n := len(c.numa)
			want := 5 + 9*n + n + len(exp.NIC) + 2
			if len(res) != want {
				t.Errorf("%d checks, want %d", len(res), want)
			}
		})
		for _, f := range faults {
			switch {
			case f.needs == "pcie" && !c.pcie, f.needs == "nvlink" && c.nvlink != NVLinkAllActive, f.needs == "nics" && !c.nics:
				continue // the platform has nothing for this fault to break
			}
			gpu := f.gpu % len(c.numa)
			want := f.want
			if strings.Contains(want, "%d") {
				want = fmt.Sprintf(want, gpu)
			}
			t.Run(c.mock+"/"+string(f.kind), func(t *testing.T) {
				fault := nvmlfacts.Fault{Kind: f.kind, GPU: gpu, Value: 79}
				got := failed(Check(exp, collectMock(t, c.mock, fault), healthyHost(c)))
				if diff := cmp.Diff([]string{want}, got); diff != "" {
					t.Errorf("failed checks (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestHostAndNVMLErrors(t *testing.T) {
	c := mockCases()[1]
	exp := expectationFor(t, c)
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
	if r := checkPCIe(Expectation{}, &g); r.Status != StatusPass || !strings.Contains(r.Observed, "idle at Gen1") || !strings.Contains(r.Observed, "not measured") {
		t.Errorf("idle: %+v (want a pass that says the speed was not measured)", r)
	}
	g.Throttle = &nvmlfacts.Throttle{Active: []string{}}
	if r := checkPCIe(Expectation{}, &g); r.Status != StatusFail || !strings.Contains(r.Message, "00000000:18:00.0") {
		t.Errorf("busy at Gen1: %+v", r)
	}
}

// TestPCIeHostCapMessage checks the message when the link's maximum (GPU
// and host together) is below the GPU's own: a Gen5 GPU in a Gen4 server is
// not fixed by reseating it, so the message names the spec knob.
func TestPCIeHostCapMessage(t *testing.T) {
	tests := []struct {
		name      string
		link      nvmlfacts.PCIeLink
		idle      bool
		status    Status
		want, not string
	}{
		{"host-capped busy", nvmlfacts.PCIeLink{CurrentGen: 4, MaxGen: 4, GPUMaxGen: 5, CurrentWidth: 16, MaxWidth: 16}, false, StatusFail, "min_pcie_gen = 4", "reseat"},
		{"host-capped idle", nvmlfacts.PCIeLink{CurrentGen: 1, MaxGen: 4, GPUMaxGen: 5, CurrentWidth: 16, MaxWidth: 16}, true, StatusFail, "min_pcie_gen = 4", "reseat"},
		{"trained below max", nvmlfacts.PCIeLink{CurrentGen: 3, MaxGen: 5, GPUMaxGen: 5, CurrentWidth: 16, MaxWidth: 16}, false, StatusFail, "reseat", "min_pcie_gen"},
		{"narrow", nvmlfacts.PCIeLink{CurrentGen: 5, MaxGen: 5, GPUMaxGen: 5, CurrentWidth: 8, MaxWidth: 16}, false, StatusFail, "reseat", "min_pcie_gen"},
		{"full", nvmlfacts.PCIeLink{CurrentGen: 5, MaxGen: 5, GPUMaxGen: 5, CurrentWidth: 16, MaxWidth: 16}, false, StatusPass, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			link := tt.link
			g := nvmlfacts.GPU{Index: 0, BusID: "00000000:18:00.0", PCIe: &link, Throttle: &nvmlfacts.Throttle{Active: []string{}}}
			if tt.idle {
				g.Throttle = &nvmlfacts.Throttle{Mask: 1, Active: []string{nvmlfacts.ThrottleGPUIdle}}
			}
			r := checkPCIe(Expectation{}, &g)
			if r.Status != tt.status || !strings.Contains(r.Message, tt.want) || (tt.not != "" && strings.Contains(r.Message, tt.not)) {
				t.Errorf("%+v: want %s with %q and without %q", r, tt.status, tt.want, tt.not)
			}
		})
	}
}

// TestNCCLShortSweep: a sweep that stops below the catalogue floor's
// message size is not judged against that floor, whichever side of it the
// smaller size's busbw lands (busbw grows with size, so a short sweep
// usually lands below). Other rules still fail it.
func TestNCCLShortSweep(t *testing.T) {
	c := mockCases()[1]
	exp := Expectation{GPUModel: "H100", Interconnect: InterconnectNVSwitch, GPUCount: 8, NCCL: []NCCLExpectation{
		{Name: "short", Command: "all_reduce_perf -b 128M -e 512M -g 8"},
	}}
	full := parseFixture(t, "all_reduce_perf-8xH100-nvswitch-1node.txt")[0]
	// Keep the rows up to 512M (431.81/430.69 GB/s, under the catalogue's
	// 460 GB/s at 16G) and the footer: a complete run of a shorter sweep.
	short := full
	short.Rows = full.Rows[:3]
	corrupt := short
	corrupt.Rows = append([]nccltest.Row(nil), short.Rows...)
	three := int64(3)
	corrupt.Rows[1].InPlace.Wrong = &three
	tests := []struct {
		name   string
		run    nccltest.Run
		status Status
		want   string
	}{
		{"short sweep", short, StatusError, "-e 16G"},
		{"short sweep with #wrong", corrupt, StatusFail, "#wrong"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := HostFacts{NCCL: map[string]nccltest.Result{"short": {Runs: []nccltest.Run{tt.run}}}}
			var got *CheckResult
			for _, r := range Check(exp, collectMock(t, c.mock), extra) {
				if r.ID == "nccl.short" {
					got = &r
				}
			}
			if got == nil || got.Status != tt.status || !strings.Contains(got.Message, tt.want) {
				t.Errorf("%+v: want %s with %q", got, tt.status, tt.want)
			}
			if got != nil && strings.Contains(got.Message, "below the floor") {
				t.Errorf("%+v: judged against a floor measured at a larger size", got)
			}
		})
	}
}

// TestNCCLNotValidated: a run with -c 0 counts no #wrong; a pass must not
// read as "#wrong 0" checked.
func TestNCCLNotValidated(t *testing.T) {
	c := mockCases()[1]
	exp := Expectation{NCCL: []NCCLExpectation{{Name: "c0", Command: "all_reduce_perf -c 0", MinBusBWGBps: 1}}}
	tests := []struct {
		fixture string
		want    string
	}{
		{"all_reduce_perf-16xH100-2node-ib-srun-label-check0-degraded.txt", "not validated"},
		{"all_reduce_perf-8xH100-nvswitch-1node.txt", ""},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			extra := HostFacts{NCCL: map[string]nccltest.Result{"c0": {Runs: parseFixture(t, tt.fixture)}}}
			for _, r := range Check(exp, collectMock(t, c.mock), extra) {
				if r.ID != "nccl.c0" {
					continue
				}
				if r.Status != StatusPass {
					t.Fatalf("%+v: want a pass", r)
				}
				if got := strings.Contains(r.Observed, "not validated"); got != (tt.want != "") {
					t.Errorf("observed %q: want mention of no validation = %v", r.Observed, tt.want != "")
				}
			}
		})
	}
}

// TestGPUModelWholeTokens: the spec's model must name the GPU, not a
// prefix of another model's name (A10 is not an A100, L4 not an L40S).
func TestGPUModelWholeTokens(t *testing.T) {
	tests := []struct {
		model, name string
		pass        bool
	}{
		{"H100", "NVIDIA H100 80GB HBM3", true},
		{"A100", "NVIDIA A100-SXM4-80GB", true},
		{"a100", "A100-SXM4-40GB", true},
		{"L40S", "NVIDIA L40S", true},
		{"H100 80GB", "NVIDIA H100 80GB HBM3", true},
		{"A10", "NVIDIA A100-SXM4-80GB", false},
		{"L4", "NVIDIA L40S", false},
		{"L40", "NVIDIA L40S", false},
		{"H20", "NVIDIA H200", false},
		{"H100 SXM", "NVIDIA H100 80GB HBM3", false},
	}
	for _, tt := range tests {
		t.Run(tt.model+" on "+tt.name, func(t *testing.T) {
			rep := &nvmlfacts.Report{GPUs: []nvmlfacts.GPU{{Index: 0, Name: tt.name}}}
			var got *CheckResult
			for _, r := range checkNVML(Expectation{GPUModel: tt.model}, rep) {
				if r.ID == "nvml.gpu_model" {
					got = &r
				}
			}
			if got == nil || (got.Status == StatusPass) != tt.pass {
				t.Errorf("%+v, want pass=%v", got, tt.pass)
			}
		})
	}
}

// TestMIGUnsupported: a GPU that reports no MIG mode (NVML answers
// NOT_SUPPORTED on GPUs without MIG) satisfies "MIG off" and fails "MIG on".
func TestMIGUnsupported(t *testing.T) {
	on, off := true, false
	tests := []struct {
		name   string
		want   *bool
		mig    *nvmlfacts.MIG
		status Status
	}{
		{"off, unsupported", &off, nil, StatusPass},
		{"on, unsupported", &on, nil, StatusFail},
		{"on, enabled", &on, &nvmlfacts.MIG{Enabled: true}, StatusPass},
		{"on, pending", &on, &nvmlfacts.MIG{PendingEnabled: true}, StatusFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := nvmlfacts.GPU{Index: 0, BusID: "00000000:18:00.0", MIG: tt.mig}
			if r := checkMIG(Expectation{MIG: tt.want}, &g); r == nil || r.Status != tt.status {
				t.Errorf("%+v, want %s", r, tt.status)
			}
		})
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
