package verify

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/smi"
)

// fallbackReport is what the nvidia-smi path makes of a real topo -m
// capture (smi/testdata/topo/README.md): one GPU per matrix row (bus ids
// stand-ins, as -q -x of the same machine is not published), NVLink per
// link not collected, the matrix applied.
func fallbackReport(t *testing.T, capture string) *nvmlfacts.Report {
	t.Helper()
	data, err := os.ReadFile("smi/testdata/topo/" + capture)
	if err != nil {
		t.Fatal(err)
	}
	top, err := smi.ParseTopo(data)
	if err != nil {
		t.Fatal(err)
	}
	rep := &nvmlfacts.Report{Source: nvmlfacts.SourceNvidiaSMI,
		NotCollected: []string{nvmlfacts.FactNVLink, nvmlfacts.FactNUMA, nvmlfacts.FactTopology, nvmlfacts.FactXID}}
	for _, g := range top.GPUs {
		rep.GPUs = append(rep.GPUs, nvmlfacts.GPU{Index: g.Index, BusID: fmt.Sprintf("bus-of-gpu%d", g.Index)})
	}
	top.Apply(rep)
	return rep
}

func pairChecks(exp Expectation, rep *nvmlfacts.Report) map[string]CheckResult {
	out := map[string]CheckResult{}
	for _, r := range Check(exp, rep, HostFacts{}) {
		if strings.HasPrefix(r.ID, "nvml.nvlink_pairs[") || strings.HasPrefix(r.ID, "nvml.nvlink[") {
			out[r.ID] = r
		}
	}
	return out
}

// TestNVLinkPairsOnRealTopologies judges the NV# counts of published
// `nvidia-smi topo -m` matrices on the fallback path.
func TestNVLinkPairsOnRealTopologies(t *testing.T) {
	nvswitch := Expectation{KB: testKB, NVLink: NVLinkAllActive, Interconnect: InterconnectNVSwitch}

	// HGX A100: NV12 between every pair, as an NVSwitch board should.
	got := pairChecks(nvswitch, fallbackReport(t, "topo-m-8xA100-nv12-17nic.txt"))
	for i := 0; i < 8; i++ {
		r := got[fmt.Sprintf("nvml.nvlink_pairs[gpu%d]", i)]
		if r.Status != StatusPass || r.Expected != "NV12 to every GPU (NVSwitch)" || !strings.HasPrefix(r.Observed, "NV12 to gpu") || strings.Contains(r.Observed, ";") {
			t.Errorf("A100 gpu%d: %+v", i, r)
		}
		// nvml.nvlink stays a skip: per-link state is not on this path.
		if r := got[fmt.Sprintf("nvml.nvlink[gpu%d]", i)]; r.Status != StatusSkip {
			t.Errorf("nvml.nvlink[gpu%d]: %+v", i, r)
		}
	}

	// NV18 boards (H100 class): every pair full.
	for capture, gpus := range map[string]int{
		"topo-m-8gpu-nv18-6nic-della-empty-affinity.txt": 8, "topo-matrix-8xH100-nv18-no-nic-rhel-ai.txt": 8,
		"topo-m-8gpu-nv18-12nic-tpgds-aihub0007.txt": 8, "topo-m-4of8-nv18-cuda-visible-devices-brev.txt": 4,
	} {
		got := pairChecks(nvswitch, fallbackReport(t, capture))
		for i := 0; i < gpus; i++ {
			if r := got[fmt.Sprintf("nvml.nvlink_pairs[gpu%d]", i)]; r.Status != StatusPass || r.Expected != "NV18 to every GPU (NVSwitch)" {
				t.Errorf("%s gpu%d: %+v", capture, i, r)
			}
		}
	}

	// DGX-1 (V100 hybrid cube mesh): NV1/NV2 to four peers, PCIe to the
	// rest. Without a hardware block every GPU reaches another: pass,
	// each pair reported.
	got = pairChecks(Expectation{KB: testKB, NVLink: NVLinkAllActive}, fallbackReport(t, "topo-m-dgx1-8xV100-4nic-with-ansi-escapes.txt"))
	if r := got["nvml.nvlink_pairs[gpu0]"]; r.Status != StatusPass || r.Observed != "NV2 to gpu3, gpu4; NV1 to gpu1, gpu2; no NVLink to gpu5, gpu6, gpu7" {
		t.Errorf("DGX-1 gpu0: %+v", r)
	}

	// 4x A10 over PCIe (SYS between all): right for a PCIe-only spec,
	// wrong where NVLink is expected.
	a10 := fallbackReport(t, "topo-m-4xA10-pcie-sys-2nic.txt")
	if r := pairChecks(Expectation{KB: testKB, NVLink: NVLinkNone, Interconnect: InterconnectPCIe}, a10)["nvml.nvlink_pairs[gpu2]"]; r.Status != StatusPass {
		t.Errorf("A10 none: %+v", r)
	}
	if r := pairChecks(nvswitch, a10)["nvml.nvlink_pairs[gpu2]"]; r.Status != StatusFail || !strings.Contains(r.Message, "no NVLink between any GPUs") {
		t.Errorf("A10 all_active: %+v", r)
	}
	// The A100 matrix on a spec that says PCIe only.
	if r := pairChecks(Expectation{KB: testKB, NVLink: NVLinkNone}, fallbackReport(t, "topo-m-8xA100-nv12-17nic.txt"))["nvml.nvlink_pairs[gpu0]"]; r.Status != StatusFail {
		t.Errorf("A100 none: %+v", r)
	}
}

// TestNVLinkPairsBlame: faults modelled on the real HGX A100 matrix (its
// pairs edited after parsing): a GPU that lost links shows fewer on every
// pair and is the one failed; one short pair between two full GPUs fails
// both ends, each naming the other.
func TestNVLinkPairsBlame(t *testing.T) {
	nvswitch := Expectation{KB: testKB, NVLink: NVLinkAllActive, Interconnect: InterconnectNVSwitch}
	rep := fallbackReport(t, "topo-m-8xA100-nv12-17nic.txt")
	for i, p := range rep.GPUTopology {
		if p.A == 3 || p.B == 3 {
			rep.GPUTopology[i].NVLinks = 11
		}
	}
	got := pairChecks(nvswitch, rep)
	if r := got["nvml.nvlink_pairs[gpu3]"]; r.Status != StatusFail || !strings.Contains(r.Message, "bus-of-gpu3 has at most NV11 to any GPU where the node's other GPUs have NV12") {
		t.Errorf("gpu3: %+v", r)
	}
	for _, i := range []int{0, 1, 2, 4, 5, 6, 7} {
		if r := got[fmt.Sprintf("nvml.nvlink_pairs[gpu%d]", i)]; r.Status != StatusPass {
			t.Errorf("gpu%d blamed for gpu3: %+v", i, r)
		}
	}

	rep = fallbackReport(t, "topo-m-8xA100-nv12-17nic.txt")
	for i, p := range rep.GPUTopology {
		if p.A == 2 && p.B == 5 {
			rep.GPUTopology[i].NVLinks = 0
		}
	}
	got = pairChecks(nvswitch, rep)
	if r := got["nvml.nvlink_pairs[gpu2]"]; r.Status != StatusFail || !strings.Contains(r.Message, "gpu5 (NV0)") {
		t.Errorf("gpu2: %+v", r)
	}
	if r := got["nvml.nvlink_pairs[gpu5]"]; r.Status != StatusFail || !strings.Contains(r.Message, "gpu2 (NV0)") {
		t.Errorf("gpu5: %+v", r)
	}
	if r := got["nvml.nvlink_pairs[gpu0]"]; r.Status != StatusPass {
		t.Errorf("gpu0: %+v", r)
	}
}
