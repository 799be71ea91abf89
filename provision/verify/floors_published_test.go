package verify

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
)

// TestPublishedRunsAgainstCatalogueFloors holds every floor of the
// knowledge base that a published run's shape reaches against that run
// (issue 27 items 4 and 7): a healthy published run must pass its floor,
// and a floor that passes a run its author reports degraded is a defect.
// The shapes (GPU model, GPUs per node, node count, fabric) are the
// publisher's, from the run's rank lines or, where the author elided them,
// from the job that produced it (see nccltest/testdata/README.md).
func TestPublishedRunsAgainstCatalogueFloors(t *testing.T) {
	cat := NewCatalogue(testKB.NCCLFloors())
	tests := []struct {
		file    string
		model   string
		perNode int
		nodes   int    // 1: single-node floor by interconnect
		network string // multi-node fabric
		ic      Interconnect
		coll    string
		healthy bool
		// noFloor: the catalogue has no floor for the run's shape (none
		// published); the run is still judged on every other rule.
		noFloor bool
		// cutByAuthor: the publisher kept only the table; gpuform fails
		// the text for its missing footer, and the floor must add nothing.
		cutByAuthor bool
		// status is what gpuform must say; message, a part of its reason.
		status  Status
		message string
		// observed, where set, is what gpuform must read from the run.
		observed string
	}{
		// Google Cloud a3-megagpu-8g, GPUDirect-TCPXO, -e 8G (issue 11).
		{file: "all_reduce_perf-16xH100-2node-gcp-a3mega-tcpxo-mpirun.txt", model: "H100", perNode: 8, nodes: 2, network: "gcp_tcpxo", coll: "all_reduce", healthy: true, status: StatusPass},
		// Google Cloud A4, 8x RoCE per node; the floor is an average.
		{file: "all_gather_perf-16xB200-2node-gcp-a4-roce.txt", model: "B200", perNode: 8, nodes: 2, network: "roce", coll: "all_gather", healthy: true, status: StatusPass},
		// CoreWeave, 8 nodes x 8 H100 over InfiniBand with SHARP, -e 8G:
		// 385.56 GB/s clears the NDR floor read at 16G.
		{file: "all_reduce_perf-64xH100-8node-ib-sharp-coreweave-elided.txt", model: "H100", perNode: 8, nodes: 8, network: "ib_ndr", coll: "all_reduce", healthy: true, status: StatusPass},
		// nccl-tests#290: 2 nodes x 8 H100, NDR, 155.57 GB/s at 8G where
		// 8x NDR reaches 380+ (the author asked why; untuned). AICR's
		// provisional 150 GB/s passed it; the NDR floor must not.
		{file: "all_reduce_perf-16xH100-2node-ib-srun-label-check0-degraded.txt", model: "H100", perNode: 8, nodes: 2, network: "ib_ndr", coll: "all_reduce", healthy: false, status: StatusError, message: "below the floor 300.00 GB/s, which is for 16G: the sweep ends too early to judge; extend it (-e 16G)"},
		// AWS p4d.24xlarge, 2 nodes x 8 A100 over 4x 100 Gb/s EFA: AWS's
		// aws-efa-eks example log, NCCL 2.9.9, 43.81 GB/s at 4G, and the
		// earlier NCCL 2.8.3 one it replaced, 32.71 at 1G, the lowest
		// healthy run, which the derived floor (29 at 1G) must pass.
		{file: "all_reduce_perf-16xA100-2node-aws-p4d-efa-nccl2.9.9-eks-tag-output.txt", model: "A100", perNode: 8, nodes: 2, network: "aws_efa", coll: "all_reduce", healthy: true, status: StatusPass, observed: "busbw 43.72 GB/s at 4G"},
		{file: "all_reduce_perf-16xA100-2node-aws-p4d-efa-nccl2.8.3-eks-tag-output.txt", model: "A100", perNode: 8, nodes: 2, network: "aws_efa", coll: "all_reduce", healthy: true, status: StatusPass, observed: "busbw 32.71 GB/s at 1G"},
		// AWS's awsome-distributed-training "should look as below" tables:
		// 2x p4de.24xlarge (A100 80GB, 4x 100 Gb/s EFA) 78.33 GB/s at 2G,
		// and 2x p5.48xlarge (H100, 32x EFA) 487.09 at 16G. The author cut
		// everything but the table, footer included, so gpuform cannot tell
		// the text from a run that died before its footer and fails it on
		// that; the floor itself must not add a reason.
		{file: "all_reduce_perf-16xA100-2node-aws-p4de-efa-srun-label-table-only.txt", model: "A100", perNode: 8, nodes: 2, network: "aws_efa", coll: "all_reduce", healthy: true, cutByAuthor: true,
			status: StatusFail, message: `no "Out of bounds values" footer`, observed: "busbw 78.33 GB/s at 2G"},
		{file: "all_reduce_perf-16xH100-2node-aws-p5-efa-srun-label-table-only.txt", model: "H100", perNode: 8, nodes: 2, network: "aws_efa", coll: "all_reduce", healthy: true, cutByAuthor: true,
			status: StatusFail, message: `no "Out of bounds values" footer`, observed: "busbw 487.09 GB/s at 16G"},
		// The same guide's EKS excerpt, two p5.48xlarge, NCCL 2.18.5, -e 2G
		// with the middle rows elided: 437.79 at 2G clears AICR's 300 read
		// at 16G.
		{file: "all_reduce_perf-16xH100-2node-aws-p5-efa-eks-tag-output-elided.txt", model: "H100", perNode: 8, nodes: 2, network: "aws_efa", coll: "all_reduce", healthy: true, status: StatusPass,
			observed: "busbw 437.79 GB/s at 2G (the floor is for 16G; the run's largest size already clears it)"},
		// AWS Batch on p5 (the guide does not say how many nodes; the floor
		// holds for 2 or more): 483.05 at 16G.
		{file: "all_reduce_perf-H100-aws-p5-efa-batch-tag-output-table-only.txt", model: "H100", perNode: 8, nodes: 2, network: "aws_efa", coll: "all_reduce", healthy: true, status: StatusPass, observed: "busbw 483.05 GB/s at 16G"},
		// OCI BM.GPU4.8, 2 nodes x 8 A100 over 16x 100 Gb/s RoCE, 191.75 GB/s
		// at 10G: no published A100 RoCE floor (the catalogue's floors
		// are keyed by GPU and fabric, not NIC count, and A100 RoCE nodes
		// ship with 8x 100 to 16x 100 Gb/s), so bandwidth is not judged;
		// the run passes the other rules.
		{file: "all_reduce_perf-16xA100-2node-roce-16x100g-oci-mpirun.txt", model: "A100", perNode: 8, nodes: 2, network: "roce", coll: "all_reduce", healthy: true, noFloor: true, status: StatusPass, observed: "busbw 191.75 GB/s at 10G"},
		// ABCI Compute Node (A), 2 nodes x 8 A100 over 4x 200 Gb/s HDR with
		// SHARP, 105.46 GB/s at 2G: the only healthy published HDR run
		// found. No HDR floor: DGX A100 nodes carry 8 HDR rails, ABCI's 4,
		// so one number per GPU and fabric either fails this run or passes
		// an 8-rail node with half its rails gone.
		{file: "all_reduce_perf-16xA100-2node-abci-4x-hdr-sharp-snipped-by-author.txt", model: "A100", perNode: 8, nodes: 2, network: "ib_hdr", coll: "all_reduce", healthy: true, noFloor: true, status: StatusPass, observed: "busbw 105.46 GB/s at 2G"},
		// Single node: nccl-tests#290's 8x H100 (476 GB/s, "in the
		// expected range" per an NVIDIA maintainer), -e 4G against 460 at 16G.
		{file: "all_reduce_perf-8xH100-nvswitch-1node.txt", model: "H100", perNode: 8, nodes: 1, ic: InterconnectNVSwitch, coll: "all_reduce", healthy: true, status: StatusPass},
		// OCI BM.GPU4.8, 8x A100 at 10G against 228 at 16G.
		{file: "all_reduce_perf-8xA100-sxm4-40gb-1node-mpirun-oci.txt", model: "A100", perNode: 8, nodes: 1, ic: InterconnectNVSwitch, coll: "all_reduce", healthy: true, status: StatusPass},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var th Threshold
			var ok bool
			if tt.nodes > 1 {
				th, ok = cat.LookupMultiNode(tt.model, tt.perNode, tt.nodes, tt.network, tt.coll)
			} else {
				th, ok = cat.Lookup(tt.model, tt.ic, tt.perNode, tt.coll)
			}
			if ok == tt.noFloor {
				t.Fatalf("catalogue floor for %s x %d, %d node(s), %s%s: found %v (%s), want %v", tt.model, tt.perNode, tt.nodes, tt.network, tt.ic, ok, th.Platform, !tt.noFloor)
			}
			res := nccltest.Result{Runs: parseFixture(t, tt.file)}
			var r CheckResult
			if tt.noFloor {
				judgeBusBW(&r, res, 0, nil, nil)
			} else {
				judgeBusBW(&r, res, th.MinBusBWGBps, &th, nil)
			}
			if tt.cutByAuthor {
				if strings.Contains(r.Message, "floor") {
					t.Errorf("healthy run's bandwidth judged against %s (%.0f GB/s): %s", th.Platform, th.MinBusBWGBps, r.Message)
				}
			} else if tt.healthy != (r.Status == StatusPass) {
				t.Errorf("%s run judged %s against %s (%.0f GB/s): %s", map[bool]string{true: "healthy", false: "degraded"}[tt.healthy], r.Status, th.Platform, th.MinBusBWGBps, r.Message)
			}
			if r.Observed != tt.observed && tt.observed != "" {
				t.Errorf("observed %q, want %q", r.Observed, tt.observed)
			}
			if r.Status != tt.status || !strings.Contains(r.Message, tt.message) {
				t.Errorf("%s %q, want %s with %q", r.Status, r.Message, tt.status, tt.message)
			}
		})
	}
}

// TestNDRFloorSource: the NDR multi-node floor is gpuform's derived row,
// with its sources, not AICR's provisional 150 GB/s (which passes the
// degraded run above at 8G: 155.57 >= 150).
func TestNDRFloorSource(t *testing.T) {
	th, ok := NewCatalogue(testKB.NCCLFloors()).LookupMultiNode("NVIDIA H100 80GB HBM3", 8, 2, "ib_ndr", "all_reduce")
	if !ok {
		t.Fatal("no NDR floor")
	}
	if th.MinBusBWGBps <= 155.57 || th.MessageBytes != 16<<30 || !strings.Contains(th.Platform, "8x 400 Gb/s NDR") {
		t.Errorf("NDR floor %+v", th)
	}
	for _, want := range []string{"h100-eks-ubuntu-training.yaml", "h100-aks-training.yaml", "coreweave/nccl-tests", "nccl-tests/issues/290"} {
		if !strings.Contains(th.Source, want) {
			t.Errorf("source %q lacks %q", th.Source, want)
		}
	}
	for _, f := range testKB.NCCLFloors() {
		if f.Network == "ib_ndr" && f.Threshold.Fact.Status != kb.Derived {
			t.Errorf("NDR floor status %s, want derived (computed from AICR's calibrated EFA floor)", f.Threshold.Fact.Status)
		}
	}
}

// TestA100EFAFloorSource: the p4d.24xlarge floor is gpuform's derived row,
// read at 1G, below the lowest published healthy p4d run (32.71 GB/s at 1G)
// by AICR's 10% tolerance, with the runs it comes from as its sources.
func TestA100EFAFloorSource(t *testing.T) {
	th, ok := NewCatalogue(testKB.NCCLFloors()).LookupMultiNode("NVIDIA A100-SXM4-40GB", 8, 2, "aws_efa", "all_reduce")
	if !ok {
		t.Fatal("no A100 EFA floor")
	}
	if th.MinBusBWGBps != 29 || th.MessageBytes != 1<<30 || !strings.Contains(th.Platform, "4x 100 Gb/s EFA") {
		t.Errorf("A100 EFA floor %+v", th)
	}
	for _, want := range []string{"aws-efa-eks/blob/a5c0b9bf7fb9cf5f906bb3bb38605484350e26c7", "aws-efa-eks/blob/867b482f3acaefacb85f80903890d6a27399f7c2", "h100-gke-cos-training.yaml"} {
		if !strings.Contains(th.Source, want) {
			t.Errorf("source %q lacks %q", th.Source, want)
		}
	}
	for _, f := range testKB.NCCLFloors() {
		if f.Network == "aws_efa" && f.GPUModel == "A100" && f.Threshold.Fact.Status != kb.Derived {
			t.Errorf("A100 EFA floor status %s, want derived (from published healthy runs)", f.Threshold.Fact.Status)
		}
	}
	// No published multi-node floor was found for HDR InfiniBand, and the
	// one healthy published HDR run (ABCI, 4 rails) cannot set a floor for
	// 8-rail nodes: the catalogue says nothing rather than guess.
	for _, m := range []string{"A100", "H100"} {
		if th, ok := NewCatalogue(testKB.NCCLFloors()).LookupMultiNode(m, 8, 2, "ib_hdr", "all_reduce"); ok {
			t.Errorf("%s over ib_hdr has a floor (%s) that no published run supports", m, th.Platform)
		}
	}
}
