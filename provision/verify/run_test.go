package verify

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// TestRunHost verifies a node through a real shell with stand-ins that
// print real captures: nvidia-smi (Tesla T4), dcgmi (V100 deployment run)
// and all_reduce_perf (8x H100).
func TestRunHost(t *testing.T) {
	bin := t.TempDir()
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	standins := map[string]string{
		"nvidia-smi":      abs("smi/testdata/nvidia-smi-q-x-TeslaT4-driver515-v11.xml"),
		"dcgmi":           abs("dcgm/testdata/dcgmi-diag-deployment-only-dcgm4.1.1-8xV100.txt"),
		"all_reduce_perf": abs("nccltest/testdata/all_reduce_perf-8xH100-nvswitch-1node.txt"),
	}
	for name, file := range standins {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\ncat "+file+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tr := local.New("node1", local.WithEnv(map[string]string{"PATH": bin + ":/usr/bin:/bin"}))
	exp := Expectation{KB: testKB, GPUCount: 1, GPUModel: "T4", NCCL: []NCCLExpectation{
		{Name: "allreduce", Command: "all_reduce_perf -b 128M -e 4G -g 8", MinBusBWGBps: 400},
		// Run once per group by the caller, never by RunHost.
		{Name: "fleet", Command: "mpirun -np 16 all_reduce_perf -g 1", MinBusBWGBps: 100, MultiNode: true},
	}}
	tests := []struct {
		tier Tier
		want map[string]Status
	}{
		{TierProbe, map[string]Status{"nvml.facts": StatusPass, "nvml.gpu_count": StatusPass, "nccl.allreduce": StatusNotRun}},
		{TierFull, map[string]Status{"nvml.facts": StatusPass, "dcgm.software": StatusPass, "nccl.allreduce": StatusPass, "nvml.pcie_link[gpu0]": StatusFail, "nccl.fleet": StatusNotRun}},
	}
	for _, tt := range tests {
		t.Run(string(tt.tier), func(t *testing.T) {
			res, err := RunHost(context.Background(), tr, exp, tt.tier, HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]CheckResult{}
			for _, r := range res {
				got[r.ID] = r
			}
			for id, st := range tt.want {
				if got[id].Status != st {
					t.Errorf("%s: %+v, want %s", id, got[id], st)
				}
			}
			if _, ran := got["dcgm.software"]; ran != (tt.tier != TierProbe) {
				t.Errorf("DCGM ran at tier %s: %v", tt.tier, ran)
			}
		})
	}
	// A multi-node result made elsewhere is judged on every host of the group.
	res, err := RunHost(context.Background(), tr, exp, TierFleet, HostOptions{NCCL: map[string]nccltest.Result{"fleet": {Failure: "exit status 3 (NCCL error)"}}})
	found := false
	for _, r := range res {
		if r.ID == "nccl.fleet" {
			found = true
			if r.Status != StatusFail || err != nil {
				t.Errorf("fleet result: %+v %v", r, err)
			}
		}
	}
	if !found {
		t.Error("no nccl.fleet check")
	}
	// A report collected in process (verify --local, sim) is used as is.
	own := &nvmlfacts.Report{FormatVersion: jsonformat.Version, Source: nvmlfacts.SourceNVML, GPUs: []nvmlfacts.GPU{{Index: 0, Name: "Tesla T4"}, {Index: 1, Name: "Tesla T4"}}}
	res, err = RunHost(context.Background(), tr, exp, TierProbe, HostOptions{Report: own})
	if err != nil || res[0].Observed != "NVML agent" || res[1].ID != "nvml.gpu_count" || res[1].Status != StatusFail {
		t.Errorf("in-process report not used: %+v %v", res[:2], err)
	}
	if _, err := RunHost(context.Background(), tr, exp, "deep", HostOptions{}); err == nil {
		t.Error("unknown tier accepted")
	}
}
