package verify

import (
	"strings"
	"testing"
	"time"
)

func TestCatalogue(t *testing.T) {
	c := NewCatalogue(testKB.NCCLFloors())
	single := 0
	for _, r := range c.Rows() {
		if r.Nodes == 1 {
			single++
		}
		if !strings.Contains(r.Source, "https://") || r.MinBusBWGBps <= 0 || (r.MessageBytes <= 0 && r.AvgFrom <= 0) {
			t.Errorf("row without source, floor or size: %+v", r)
		}
	}
	tests := []struct {
		model string
		ic    Interconnect
		gpus  int
		want  float64
		size  int64
	}{
		{"NVIDIA H100 80GB HBM3", InterconnectNVSwitch, 8, 460, 16 << 30},
		{"NVIDIA H200", InterconnectNVSwitch, 0, 431, 16 << 30},
		{"NVIDIA A100-SXM4-40GB", InterconnectNVSwitch, 8, 228, 16 << 30},
		{"A100", InterconnectNVLinkBridge, 2, 193, 16 << 30},
		{"A100", InterconnectNVLinkBridge, 4, 25, 8 << 30},
	}
	for _, tt := range tests {
		got, ok := c.Lookup(tt.model, tt.ic, tt.gpus, "all_reduce")
		if !ok || got.MinBusBWGBps != tt.want || got.MessageBytes != tt.size {
			t.Errorf("%s %s %d: %+v %v", tt.model, tt.ic, tt.gpus, got, ok)
		}
	}
	if single != 6 {
		t.Errorf("%d single-node rows", single)
	}
	// No public floor exists for these; the catalogue must not invent one.
	for _, m := range []string{"NVIDIA B200", "NVIDIA L40S"} {
		if got, ok := c.Lookup(m, InterconnectNVSwitch, 8, ""); ok {
			t.Errorf("%s: unexpected floor %+v", m, got)
		}
	}
}

func TestPlan(t *testing.T) {
	exp := Expectation{KB: testKB, NCCL: []NCCLExpectation{
		{Name: "single", Command: "all_reduce_perf -g 8"},
		{Name: "multi", Command: "mpirun -np 16 all_reduce_perf -g 1", MultiNode: true, Timeout: time.Minute},
	}}
	tests := []struct {
		tier     Tier
		nccl     []string
		dcgm     int
		budget   time.Duration
		maxShare time.Duration
	}{
		{TierProbe, nil, 0, 30 * time.Second, 0},
		{TierQuick, nil, 1, 3 * time.Minute, 0},
		{TierFull, []string{"single"}, 1, 15 * time.Minute, 15*time.Minute - 30*time.Second - 3*time.Minute},
		{TierFleet, []string{"single", "multi"}, 1, 45 * time.Minute, (45*time.Minute - 30*time.Second - 3*time.Minute) / 2},
	}
	for _, tt := range tests {
		t.Run(string(tt.tier), func(t *testing.T) {
			p, err := Plan(tt.tier, exp)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, n := range p.NCCL {
				names = append(names, n.Name)
				if n.Timeout <= 0 || n.Timeout > tt.maxShare {
					t.Errorf("%s timeout %s exceeds share %s", n.Name, n.Timeout, tt.maxShare)
				}
			}
			if strings.Join(names, ",") != strings.Join(tt.nccl, ",") || p.DCGMDiag != tt.dcgm || p.Budget != tt.budget || !p.NVML {
				t.Errorf("plan %+v", p)
			}
			if len(p.NCCL)+len(p.Skipped) != 2 {
				t.Errorf("tests lost: %+v", p)
			}
		})
	}
	if p, _ := Plan(TierFleet, exp); p.NCCL[1].Timeout != time.Minute {
		t.Errorf("a shorter configured timeout must be kept: %s", p.NCCL[1].Timeout)
	}
	if _, err := ParseTier("deep"); err == nil {
		t.Error("unknown tier accepted")
	}
	if _, err := Plan("deep", exp); err == nil {
		t.Error("plan for unknown tier")
	}
}

// Rows returns every floor in the catalogue.
