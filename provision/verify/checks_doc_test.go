//go:build cgo

package verify

import (
	"testing"

	"github.com/gpuform/gpuform/provision/facts"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"

	"github.com/gpuform/gpuform/provision/verify/dcgm"
	"github.com/gpuform/gpuform/provision/verify/kmsg"
)

// emittedChecks runs every check kind on every simulated system, with a
// DCGM run and an nccl-tests run, and returns the declarations of the ids
// emitted; an id no declaration matches fails the test.
func emittedChecks(t *testing.T) map[CheckID]bool {
	t.Helper()
	ids := map[CheckID]bool{}
	add := func(results []CheckResult) {
		for _, r := range results {
			d, ok := LookupCheck(r.ID)
			if !ok {
				t.Errorf("check id %q is declared in no row of Checks()", r.ID)
				continue
			}
			ids[d.ID] = true
		}
	}
	for _, c := range mockCases() {
		exp := expectationFor(t, c)
		exp.NCCL = []NCCLExpectation{{Name: "allreduce", Command: "all_reduce_perf -g 8"}}
		extra := healthyHost(c)
		extra.DCGM = &dcgm.Result{Level: 1, Failure: "host engine restarted", Diag: &dcgm.Diag{Tests: []dcgm.Test{{Name: "software", Status: "Pass"}}}}
		add(Check(exp, collectMock(t, c.mock), extra))
		// Without NVML facts: the failed nvml.facts check.
		add(Check(exp, nil, extra))
	}
	// Images against the loaded driver.
	add(Check(Expectation{KB: testKB, Spec: imageNode("nvcr.io/nvidia/pytorch:25.02-py3")}, collectMock(t, mockCases()[0].mock), HostFacts{}))
	// The spec's resources against a host, as plan compares them.
	n := specNode(t)
	add(Check(Expectation{KB: testKB, Spec: n}, nil, HostFacts{Facts: convergedFacts(t, n, false)}))
	// The binding gpuform put on the node, and the processes on its GPUs.
	bn := loadSpecNode(t, bindSpec)
	add(Check(Expectation{KB: testKB, Spec: bn, Processes: true}, twoGPUReport(), HostFacts{Facts: boundHost(t, bn)}))
	// What slurmd detects on an AutoDetect node.
	add(Check(Expectation{KB: testKB, SlurmAutodetect: true, NUMANode: map[int]int{0: 0}}, nil, HostFacts{Slurmd: &SlurmdGRES{Failure: "slurmd is not installed"}}))
	add(Check(Expectation{KB: testKB}, nil, HostFacts{Kernel: &kmsg.Log{}}))
	// The nvidia-smi fallback with its topology matrix: NV# per pair.
	add(Check(Expectation{KB: testKB, NVLink: NVLinkAllActive, Interconnect: InterconnectNVSwitch}, &nvmlfacts.Report{
		Source: nvmlfacts.SourceNvidiaSMI, NotCollected: []string{nvmlfacts.FactNVLink},
		GPUs:        []nvmlfacts.GPU{{Index: 0, BusID: "00000000:07:00.0"}, {Index: 1, BusID: "00000000:0F:00.0"}},
		GPUTopology: []nvmlfacts.GPUPair{{A: 0, B: 1, NVLinks: 12}},
	}, HostFacts{}))
	// NIC interrupts and MTUs.
	add(Check(Expectation{KB: testKB, Spec: loadSpecNode(t, nicSpec)}, nil, HostFacts{Facts: nicHost()}))
	// A rack-scale tray's fabric registration (TestFabricCaptures).
	add(Check(Expectation{KB: testKB, Fabric: true, VBIOS: "97.00.0B.00.2F"}, collectMock(t, nvmlfacts.MockGB200Tray), HostFacts{}))
	// IMEX on a tray of an NVLink domain (TestIMEXPeers judges it on a
	// probed simulated tray).
	// Pinned NIC firmware, BIOS and BMC (TestNICFirmwareAndBIOSPins and
	// TestBMCPin judge them on probed simulated trays).
	add(Check(Expectation{KB: testKB, NICFirmware: "28.43.2026", BIOS: "1.3.5", BMC: "25.06"}, nil, HostFacts{Facts: &facts.Node{Host: "t1"}}))
	add(Check(Expectation{KB: testKB, IMEX: &IMEXExpectation{Domains: []IMEXDomain{{Name: "rack1", Hosts: []string{"t1"}, Peers: []string{"t1"}}}}}, nil, HostFacts{Facts: &facts.Node{Host: "t1"}}))
	return ids
}

// TestChecksEmitted keeps Checks() and the check code in step: every id a
// check emits has a declaration, and every declaration is emitted by some
// check (host.reachable by the report, for a host never reached).
func TestChecksEmitted(t *testing.T) {
	emitted := emittedChecks(t)
	emitted[CheckReachable] = true
	// The runner emits nccl_isolation for the hosts of an isolated group
	// (IsolationCheck; TestIsolationCheck).
	emitted[CheckIsolation] = true
	// nvml.peer_outlier compares hosts with each other: the runner emits
	// it after every host was verified (runner's TestPeerOutliers).
	emitted[CheckPeerOutlier] = true
	// nvml.fabric_domain compares the trays of an NVLink domain: the
	// runner emits it (runner's TestFabricDomain).
	emitted[CheckFabricDomain] = true
	emitted[CheckFirmwareDomain] = true
	// burnin.record is the runner's, with -require-burnin
	// (TestBurninRecordCheck; runner's TestRequireBurnin).
	emitted[CheckBurninRecord] = true
	// burnin.* are the runner's at -tier burnin (BurninChecks;
	// runner's TestBurninTier).
	emitted[CheckBurnin] = true
	for _, d := range Checks() {
		if !emitted[d.ID] {
			t.Errorf("Checks() declares %s, but no check emits it", d.Pattern())
		}
	}
}
