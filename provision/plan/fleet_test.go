package plan_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/plan/plantest"
	"github.com/gpuform/gpuform/provision/target"
)

// TestFiveHundredHostsReadAsOne makes a plan for 500 identical hosts and
// one that differs from facts alone (no network), and checks that the text
// plan prints each distinct plan once, with the hosts folded into ranges.
func TestFiveHundredHostsReadAsOne(t *testing.T) {
	cfg := plantest.LoadSpec(t, map[string]string{"n.gpuform.hcl": `
node "train" {
  hosts  = ["gpu[001-500].dc1.example.com"]
  sysctl = { "vm.swappiness" = "1" }
}
`})
	targets, diags := target.Select(cfg, nil)
	if diags.HasErrors() || len(targets) != 500 {
		t.Fatalf("targets: %d, %v", len(targets), diags)
	}
	node := func(swappiness string) *facts.Node {
		return &facts.Node{OS: facts.OS{ID: "ubuntu", IDLike: []string{"debian"}}, Sysctls: map[string]string{"vm.swappiness": swappiness}}
	}
	probed := make([]target.Probed, len(targets))
	for i, tg := range targets {
		probed[i] = target.Probed{Host: tg, Facts: node("60")}
		if i == 41 {
			probed[i].Facts = node("10")
		}
		if i == 499 {
			probed[i] = target.Probed{Host: tg, Err: fmt.Errorf("connect: connection refused")}
		}
	}
	p := plan.Make(testKB, probed)
	var b bytes.Buffer
	if err := plan.RenderText(&b, p, plan.RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Hosts gpu[001-041,043-499].dc1.example.com (node \"train\", 498 hosts with identical plans):",
		"Host gpu042.dc1.example.com (node \"train\"):",
		"Host gpu500.dc1.example.com (node \"train\"):\n\n  Error: connect: connection refused",
		"Fleet: 500 hosts in 3 groups: 499 to change, 0 unchanged, 1 failed to plan.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if lines := strings.Count(out, "\n"); lines > 40 {
		t.Errorf("a 500-host plan with 3 distinct cases takes %d lines", lines)
	}
	if !p.Errored || p.Applyable {
		t.Errorf("errored %v, applyable %v: a host that failed to probe makes the plan errored", p.Errored, p.Applyable)
	}
}
