package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/spec"
)

func TestPlace(t *testing.T) {
	host := func(name string) target.Host { return target.Host{Host: spec.Host{Name: name}} }
	naming := Naming{
		// The node is the host's name up to its first dot; a name
		// starting with "bad" has none.
		NodeName: func(h target.Host) (string, error) {
			if strings.HasPrefix(h.Host.Name, "bad") {
				return "", errors.New(`"{x}" is no template`)
			}
			short, _, _ := strings.Cut(h.Host.Name, ".")
			return short, nil
		},
		Scheduler: "Slurm",
		Attr:      "slurm_node_name",
		Fix:       "rollout { slurm_node_name }",
	}
	placed, hostErr := Place([]target.Host{host("gpu001.a"), host("bad1"), host("gpu002.a"), host("gpu001.b")}, naming)
	if diff := cmp.Diff([]Placed{{Target: host("gpu001.a"), Node: "gpu001"}, {Target: host("gpu002.a"), Node: "gpu002"}}, placed); diff != "" {
		t.Errorf("placed (-want +got):\n%s", diff)
	}
	got := map[string]string{}
	for h, err := range hostErr {
		got[h] = err.Error()
	}
	want := map[string]string{
		"bad1":     `no Slurm node name for bad1: slurm_node_name "{x}" is no template`,
		"gpu001.b": "spec hosts gpu001.a and gpu001.b are both Slurm node gpu001; set rollout { slurm_node_name } so each host has its own",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("host errors (-want +got):\n%s", diff)
	}
}
