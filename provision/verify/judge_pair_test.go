package verify

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
)

// TestJudgeMultiNodeRunFloorByNodeCount: a pair's run (2 nodes in its
// rank lines) is held to the catalogue's 2-node floor and the group's run
// to the floor for its node count — never one for the other, nor the
// single-node NVLink floor — and a spec floor applies to both.
func TestJudgeMultiNodeRunFloorByNodeCount(t *testing.T) {
	row := func(nodes int, min bool, floor float64, platform string) kb.NCCLFloor {
		return kb.NCCLFloor{GPUModel: "H100", GPUs: 8, Nodes: nodes, MinNodes: min, Network: "ib_ndr", Collective: "all_reduce",
			Threshold: kb.NCCLThreshold{Platform: platform, MessageSize: "1K", BusBWGBps: floor}}
	}
	cat := NewCatalogue([]kb.NCCLFloor{
		{GPUModel: "H100", Interconnect: "nvswitch", GPUs: 8, Nodes: 1, Collective: "all_reduce", Threshold: kb.NCCLThreshold{Platform: "one node", MessageSize: "1K", BusBWGBps: 460}},
		row(8, true, 140, "eight nodes or more"),
		row(2, false, 180, "two nodes"),
	})
	// The real 2-node H100 NDR run: 155.56 GB/s at 8G.
	pair := parseFixture(t, "all_reduce_perf-16xH100-2node-ib-srun-label-check0-degraded.txt")
	// Derived: the same numbers with rank lines for 8 nodes.
	group := append([]nccltest.Run(nil), pair...)
	group[0].Devices = nil
	for n := range 8 {
		for _, d := range pair[0].Devices[:8] {
			d.Host = fmt.Sprintf("node%03d", n)
			group[0].Devices = append(group[0].Devices, d)
		}
	}
	exp := Expectation{KB: testKB, GPUModel: "H100", GPUCount: 8, Interconnect: InterconnectNVSwitch}
	test := NCCLExpectation{Name: "fleet", Command: "mpirun -np 64 all_reduce_perf -g 1", MultiNode: true, Network: "ib_ndr"}
	tests := map[string]struct {
		runs     []nccltest.Run
		specMin  float64
		status   Status
		floor    float64
		expected string
	}{
		"pair against the 2-node floor":  {runs: pair, status: StatusFail, floor: 180, expected: "two nodes"},
		"group against the 8-node floor": {runs: group, status: StatusPass, floor: 140, expected: "eight nodes or more"},
		"pair against the spec's floor":  {runs: pair, specMin: 120, status: StatusPass, floor: 120, expected: "from spec"},
		"group against the spec's floor": {runs: group, specMin: 160, status: StatusFail, floor: 160, expected: "from spec"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			nt := test
			nt.MinBusBWGBps = tc.specMin
			r, busbw, floor := JudgeMultiNodeRun(cat, exp, nt, nccltest.Result{Command: nt.Command, Runs: tc.runs})
			if r.Status != tc.status || floor != tc.floor || busbw != 155.56 || !strings.Contains(r.Expected, tc.expected) || strings.Contains(r.Expected, "460") {
				t.Errorf("status %s, busbw %.2f, floor %.2f, expected %q; want %s against %.2f (%s)", r.Status, busbw, floor, r.Expected, tc.status, tc.floor, tc.expected)
			}
			if r.ID != "nccl.fleet" {
				t.Errorf("id %q", r.ID)
			}
		})
	}
}
