//go:build cgo

package verify

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
		KB:       testKB,
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
		// An idle GPU's link at Gen1 is power saving, not a fault.
		{nvmlfacts.FaultPCIeIdle, 3, "", "pcie"},
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
				if want == "" {
					if len(got) > 0 {
						t.Errorf("failed checks %v, want none", got)
					}
					return
				}
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
