package verify

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/verify/dcgm"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

func gateResults(out []CheckResult) map[string]CheckResult {
	m := map[string]CheckResult{}
	for _, r := range out {
		m[r.ID] = r
	}
	return m
}

// TestBlocks is the gate's rule: only pass, skip and a not-run check left
// to a deeper tier let a host pass; anything else, an unknown status
// included, keeps it from passing.
func TestBlocks(t *testing.T) {
	for _, tc := range []struct {
		r    CheckResult
		want bool
	}{
		{CheckResult{Status: StatusPass}, false},
		{CheckResult{Status: StatusSkip}, false},
		{CheckResult{Status: StatusNotRun}, false},
		{CheckResult{Status: StatusNotRun, Needed: true}, true},
		{CheckResult{Status: StatusFail}, true},
		{CheckResult{Status: StatusError}, true},
		{CheckResult{Status: "maybe"}, true},
		{CheckResult{}, true},
	} {
		if got := tc.r.Blocks(); got != tc.want {
			t.Errorf("%q needed=%v: Blocks() = %v, want %v", tc.r.Status, tc.r.Needed, got, tc.want)
		}
	}
}

// TestUnreadFactIsNotASkip: a per-GPU fact the NVML agent could not read
// (its query failed, which the agent reports as a warning naming the GPU
// and the call) makes the check an error that quotes the failure; a fact
// the GPU does not have (NVML's NOT_SUPPORTED, no warning) is a skip, and
// a mode the GPU lacks satisfies "disabled" and fails "enabled".
func TestUnreadFactIsNotASkip(t *testing.T) {
	on, off := true, false
	gpu := func() nvmlfacts.GPU {
		return nvmlfacts.GPU{Index: 0, Name: "NVIDIA H100 80GB HBM3", BusID: "00000000:1B:00.0"}
	}
	failed := &nvmlfacts.Report{Source: nvmlfacts.SourceNVML, GPUs: []nvmlfacts.GPU{gpu()}, Warnings: []string{
		"gpu0: GetPersistenceMode: ERROR_UNKNOWN",
		"gpu0: GetEccMode: ERROR_GPU_IS_LOST",
		"gpu0: GetRemappedRows: ERROR_UNKNOWN",
		"gpu0: GetCurrPcieLinkGeneration: ERROR_UNKNOWN",
		"gpu0: GetTemperature: ERROR_TIMEOUT",
		"gpu0: GetCurrentClocksEventReasons: ERROR_UNKNOWN",
	}}
	exp := Expectation{KB: testKB, PersistenceMode: &on, ECC: &on, MaxTemperatureC: 85}
	got := gateResults(Check(exp, failed, HostFacts{}))
	for id, call := range map[string]string{
		"nvml.persistence_mode[gpu0]":  "GetPersistenceMode",
		"nvml.ecc_mode[gpu0]":          "GetEccMode",
		"nvml.ecc_uncorrectable[gpu0]": "GetEccMode",
		"nvml.row_remap[gpu0]":         "GetRemappedRows",
		"nvml.pcie_link[gpu0]":         "GetCurrPcieLinkGeneration",
		"nvml.temperature[gpu0]":       "GetTemperature",
		"nvml.throttle[gpu0]":          "GetCurrentClocksEventReasons",
	} {
		r := got[id]
		if r.Status != StatusError || !strings.Contains(r.Message, call+" failed") || !r.Blocks() {
			t.Errorf("%s: %+v, want an error naming %s", id, r, call)
		}
		// The failure's remedy would claim what was not seen.
		if r.Remedy == nil || !strings.Contains(r.Remedy.Meaning, "could not judge") {
			t.Errorf("%s: remedy %+v, want one saying gpuform could not judge it", id, r.Remedy)
		}
	}

	// The same GPU with nothing failed: what it does not report, it does
	// not have.
	unsupported := &nvmlfacts.Report{Source: nvmlfacts.SourceNVML, GPUs: []nvmlfacts.GPU{gpu()}}
	got = gateResults(Check(exp, unsupported, HostFacts{}))
	for _, id := range []string{"nvml.ecc_uncorrectable[gpu0]", "nvml.row_remap[gpu0]", "nvml.pcie_link[gpu0]", "nvml.temperature[gpu0]", "nvml.throttle[gpu0]"} {
		if r := got[id]; r.Status != StatusSkip || r.Blocks() {
			t.Errorf("%s: %+v, want a skip (not supported by this GPU)", id, r)
		}
	}
	for _, id := range []string{"nvml.persistence_mode[gpu0]", "nvml.ecc_mode[gpu0]"} {
		if r := got[id]; r.Status != StatusFail || r.Observed != "not supported" {
			t.Errorf("%s: %+v, want a fail: the spec wants it enabled and the GPU has no such mode", id, r)
		}
	}
	got = gateResults(Check(Expectation{KB: testKB, PersistenceMode: &off, ECC: &off}, unsupported, HostFacts{}))
	for _, id := range []string{"nvml.persistence_mode[gpu0]", "nvml.ecc_mode[gpu0]"} {
		if r := got[id]; r.Status != StatusPass || r.Observed != "not supported" {
			t.Errorf("%s: %+v, want a pass: a GPU without the mode has it off", id, r)
		}
	}
}

// TestDCGMOptionalWhereTheSpecInstallsNone: at the quick tier a node
// without dcgmi skips dcgm.diag, saying "dcgm: optional, the spec installs
// no DCGM", only where the spec has no dcgm block; a spec that pins DCGM
// (a dcgm block always does) fails the node even when verify { optional }
// lists dcgm, and a spec that lists it says so in its own words.
func TestDCGMOptionalWhereTheSpecInstallsNone(t *testing.T) {
	missing := &dcgm.Result{Level: 1, NotInstalled: true}
	for _, tc := range []struct {
		name string
		exp  Expectation
		want Status
		say  string
	}{
		{"no dcgm block", Expectation{KB: testKB, DCGMNotInstalled: true}, StatusSkip, "dcgm: optional, the spec installs no DCGM"},
		{"no dcgm block, listed optional", Expectation{KB: testKB, DCGMNotInstalled: true, DCGMOptional: true}, StatusSkip, "the spec marks dcgm optional"},
		// An expectation that says nothing of the spec requires dcgmi.
		{"zero expectation", Expectation{KB: testKB}, StatusFail, "install DCGM"},
		{"dcgm pinned", Expectation{KB: testKB, DCGM: true}, StatusFail, "the spec pins DCGM"},
		{"dcgm pinned, listed optional", Expectation{KB: testKB, DCGM: true, DCGMOptional: true}, StatusFail, "the spec pins DCGM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := gateResults(Check(tc.exp, nil, HostFacts{DCGM: missing}))["dcgm.diag"]
			if r.Status != tc.want || !strings.Contains(r.Message, tc.say) {
				t.Errorf("%+v, want %s saying %q", r, tc.want, tc.say)
			}
		})
	}
	// dcgmi present: its result is judged whatever the spec installs.
	ran := &dcgm.Result{Level: 1, Diag: &dcgm.Diag{Tests: []dcgm.Test{{Name: "software", Category: "Deployment", Status: "Fail"}}}}
	if r := gateResults(Check(Expectation{KB: testKB, DCGMNotInstalled: true}, nil, HostFacts{DCGM: ran}))["dcgm.software"]; r.Status != StatusFail {
		t.Errorf("an installed dcgmi's failure on a spec without DCGM: %+v", r)
	}
}

// TestRemediesSayWhatIsTrue: the remedy of nvml.facts follows what the
// facts probe saw on the PCI bus; a host whose NVML sees more GPUs than
// the spec is not told a GPU fell off the bus; an unreachable host is
// told to check it is up and reachable.
func TestRemediesSayWhatIsTrue(t *testing.T) {
	gpuDev := facts.PCIDevice{Address: "0000:1b:00.0", Kind: facts.KindGPU}
	for _, tc := range []struct {
		name   string
		node   *facts.Node
		action kb.Action
		do     string
	}{
		{"no GPU on the bus", &facts.Node{}, kb.ActionConfig, "no NVIDIA GPU found: is this a GPU node? check the driver is installed"},
		{"GPUs without a driver", &facts.Node{PCI: []facts.PCIDevice{gpuDev}}, kb.ActionConfig, "install the driver"},
		// The driver is loaded and NVML still fails: a GPU hangs it.
		{"driver loaded", &facts.Node{PCI: []facts.PCIDevice{gpuDev}, Driver: &facts.Driver{Version: "550.127.08"}}, kb.ActionReboot, "reboot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := gateResults(Check(Expectation{KB: testKB}, nil, HostFacts{Facts: tc.node, NVMLError: "NVML cannot initialise"}))["nvml.facts"]
			if r.Status != StatusFail || r.Remedy == nil || r.Remedy.Action != tc.action || !strings.Contains(r.Remedy.Do, tc.do) {
				t.Errorf("%+v remedy %+v, want %s saying %q", r, r.Remedy, tc.action, tc.do)
			}
		})
	}

	more := &nvmlfacts.Report{Source: nvmlfacts.SourceNVML, GPUs: []nvmlfacts.GPU{{Index: 0}, {Index: 1}}}
	if r := gateResults(Check(Expectation{KB: testKB, GPUCount: 1}, more, HostFacts{}))["nvml.gpu_count"]; r.Remedy == nil || r.Remedy.Action != kb.ActionConfig || strings.Contains(r.Remedy.Meaning, "fell off") {
		t.Errorf("more GPUs than the spec: remedy %+v", r.Remedy)
	}
	fewer := &nvmlfacts.Report{Source: nvmlfacts.SourceNVML, GPUs: []nvmlfacts.GPU{{Index: 0}}}
	if r := gateResults(Check(Expectation{KB: testKB, GPUCount: 2}, fewer, HostFacts{}))["nvml.gpu_count"]; r.Remedy == nil || r.Remedy.Action != kb.ActionReboot {
		t.Errorf("fewer GPUs than the spec: remedy %+v, want the catalogue's reboot (Xid 79)", r.Remedy)
	}

	// A link a hypervisor presents, or a host caps, has no GPU to reseat;
	// a PCIe-only node with an NVLink up has no GPU to reset.
	link := func(virt string, gen, maxGen, gpuMax, width int) *nvmlfacts.Report {
		return &nvmlfacts.Report{Source: nvmlfacts.SourceNVML, GPUs: []nvmlfacts.GPU{{Index: 0, BusID: "00000000:1B:00.0", Virtualization: virt,
			PCIe: &nvmlfacts.PCIeLink{CurrentGen: gen, MaxGen: maxGen, GPUMaxGen: gpuMax, CurrentWidth: width, MaxWidth: 16}}}}
	}
	for _, tc := range []struct {
		name   string
		rep    *nvmlfacts.Report
		exp    Expectation
		action kb.Action
		do     string
	}{
		{"VM at x8", link(nvmlfacts.VirtPassThrough, 4, 4, 4, 8), Expectation{KB: testKB}, kb.ActionConfig, "what the instance type provides"},
		{"Gen5 GPU in a Gen4 host", link("", 4, 4, 5, 16), Expectation{KB: testKB}, kb.ActionConfig, "BIOS slot setting"},
		{"trained down on bare metal", link("", 4, 5, 5, 16), Expectation{KB: testKB}, kb.ActionInspect, "inspect the hardware"},
	} {
		r := gateResults(Check(tc.exp, tc.rep, HostFacts{}))["nvml.pcie_link[gpu0]"]
		if r.Status != StatusFail || r.Remedy == nil || r.Remedy.Action != tc.action || !strings.Contains(r.Remedy.Do, tc.do) {
			t.Errorf("%s: %+v remedy %+v, want %s saying %q", tc.name, r, r.Remedy, tc.action, tc.do)
		}
	}
	up := &nvmlfacts.Report{Source: nvmlfacts.SourceNVML, GPUs: []nvmlfacts.GPU{{Index: 0, NVLinks: []nvmlfacts.NVLink{{Link: 0, Active: true}}}}}
	if r := gateResults(Check(Expectation{KB: testKB, NVLink: NVLinkNone}, up, HostFacts{}))["nvml.nvlink[gpu0]"]; r.Status != StatusFail || r.Remedy == nil || r.Remedy.Action != kb.ActionConfig {
		t.Errorf("NVLink up on a PCIe-only node: %+v remedy %+v, want config", r, r.Remedy)
	}

	// A missing nccl-tests binary is not a hardware fault.
	missing := HostFacts{Tier: TierFull, NCCL: map[string]nccltest.Result{"a": {NotInstalled: true, Failure: "all_reduce_perf: not found on PATH"}}}
	if r := gateResults(Check(Expectation{KB: testKB, NCCL: []NCCLExpectation{{Name: "a", Command: "all_reduce_perf -g 8"}}}, nil, missing))["nccl.a"]; r.Status != StatusFail || r.Remedy == nil ||
		r.Remedy.Action != kb.ActionConfig || !strings.Contains(r.Remedy.Do, "install nccl-tests") {
		t.Errorf("nccl-tests not installed: %+v remedy %+v", r, r.Remedy)
	}

	if r := RemedyForCheck(testKB, "host.reachable"); r == nil || !strings.Contains(r.Do, "check the host is up and reachable") || strings.Contains(r.Do, "the source gives no action") {
		t.Errorf("host.reachable: %+v", r)
	}
}
