package verify

import (
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
)

func TestHostFactsFromNode(t *testing.T) {
	on := true
	exp := Expectation{KB: testKB, FabricManager: &on, Peermem: &on}
	tests := []struct {
		name string
		node *facts.Node
		want []string // failed or errored check ids
	}{
		{"healthy", &facts.Node{Modules: []string{"nvidia", "nvidia_peermem"}, Units: map[string]facts.UnitState{"nvidia-fabricmanager.service": {Enabled: "enabled", Active: "active"}}}, nil},
		{"fm failed, peermem missing", &facts.Node{Modules: []string{"nvidia"}, Units: map[string]facts.UnitState{"nvidia-fabricmanager.service": {Enabled: "enabled", Active: "failed"}}}, []string{"host.fabric_manager", "host.peermem"}},
		// Unknown is an error, never a pass.
		{"no facts", nil, []string{"host.fabric_manager", "host.peermem"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := failed(checkHost(exp, HostFactsFromNode(tt.node)))
			if len(got) != len(tt.want) {
				t.Fatalf("failed %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("failed %v, want %v", got, tt.want)
				}
			}
		})
	}
}
