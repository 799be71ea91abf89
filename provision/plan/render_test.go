package plan_test

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/plan/plantest"
	"github.com/gpuform/gpuform/provision/target"
)

// renderOne plans src for every host against facts f (nil facts: the host
// failed to probe) and returns the text plan.
func renderOne(t *testing.T, src string, fs ...*facts.Node) string {
	t.Helper()
	cfg := plantest.LoadSpec(t, map[string]string{"n.gpuform.hcl": src})
	targets, diags := target.Select(cfg, nil)
	if diags.HasErrors() || len(targets) != len(fs) {
		t.Fatalf("targets: %d, %v", len(targets), diags)
	}
	probed := make([]target.Probed, len(targets))
	for i, tg := range targets {
		probed[i] = target.Probed{Host: tg, Facts: fs[i]}
		if fs[i] == nil {
			probed[i].Facts, probed[i].Err = nil, errConnRefused{}
		}
	}
	var b strings.Builder
	if err := plan.RenderText(&b, plan.Make(testKB, probed), plan.RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

type errConnRefused struct{}

func (errConnRefused) Error() string { return "connect: connection refused" }

func ubuntu(sysctls map[string]string) *facts.Node {
	return &facts.Node{OS: facts.OS{ID: "ubuntu", IDLike: []string{"debian"}}, Sysctls: sysctls}
}

// The text plan reads like Terraform's: a created resource shows every
// attribute it will have (never only "# (n unchanged attributes hidden)"),
// a live value that changes reads "~ key = before -> after", sizes read in
// one unit, and the totals appear once per group plus once for a fleet.
func TestRenderText(t *testing.T) {
	const sysctl = `
node "n" {
  hosts  = [%s]
  sysctl = { "vm.swappiness" = "1", "kernel.numa_balancing" = "0" }
}
`
	one := func(hosts string) string { return strings.Replace(sysctl, "%s", hosts, 1) }
	for _, tc := range []struct {
		name      string
		src       string
		facts     []*facts.Node
		want, not []string
	}{{
		name:  "create shows every attribute",
		src:   one(`"gpu1"`),
		facts: []*facts.Node{ubuntu(map[string]string{"vm.swappiness": "1", "kernel.numa_balancing": "0"})},
		want: []string{
			"  + sysctl {\n      + kernel.numa_balancing = \"0\"\n      + vm.swappiness         = \"1\"\n    }\n",
			"Plan: 1 to add, 0 to change, 0 to destroy.",
		},
		not: []string{"unchanged attribute", "Fleet:"},
	}, {
		name:  "a changed live value is an update",
		src:   one(`"gpu1"`),
		facts: []*facts.Node{ubuntu(map[string]string{"vm.swappiness": "1", "kernel.numa_balancing": "1"})},
		want: []string{
			"  # sysctl (/etc/sysctl.d/90-gpuform.conf) will be updated in-place\n  ~ sysctl {\n      ~ kernel.numa_balancing = \"1\" -> \"0\"\n        # (1 unchanged attribute hidden)\n    }\n",
			"Plan: 0 to add, 1 to change, 0 to destroy.",
		},
		not: []string{"# now", "+ sysctl", "+ create"},
	}, {
		name:  "one host has one Plan line",
		src:   one(`"gpu1"`),
		facts: []*facts.Node{ubuntu(map[string]string{"vm.swappiness": "60"})},
		want:  []string{"Plan: 0 to add, 1 to change, 0 to destroy.\n"},
		not:   []string{"Fleet:", "Plan: 0 to add, 1 to change, 0 to destroy.\nPlan:"},
	}, {
		name:  "a group's line is each host's share, the fleet line the total",
		src:   one(`"gpu1", "gpu2", "gpu3"`),
		facts: []*facts.Node{ubuntu(map[string]string{"vm.swappiness": "60"}), ubuntu(map[string]string{"vm.swappiness": "60"}), ubuntu(map[string]string{"vm.swappiness": "1", "kernel.numa_balancing": "0"})},
		want: []string{
			"Plan: 0 to add, 1 to change, 0 to destroy on each of the 2 hosts.",
			"Plan: 1 to add, 0 to change, 0 to destroy.\n",
			"Fleet: 3 hosts in 2 groups: 3 to change, 0 unchanged, 0 failed to plan.\nPlan: 1 to add, 2 to change, 0 to destroy.\n",
		},
	}, {
		name:  "no totals when every host failed",
		src:   one(`"gpu1", "gpu2"`),
		facts: []*facts.Node{nil, nil},
		want:  []string{"Error: connect: connection refused", "No plan: no host could be planned; see the errors above.\n"},
		not:   []string{"Plan:", "to add"},
	}, {
		name: "sizes in one unit",
		src: `
node "n" {
  hosts = ["gpu1"]
  container {
    runtime          = "docker"
    default_shm_size = "16GiB"
    ulimits = {
      memlock = "unlimited"
      stack   = "64MiB"
    }
  }
}
`,
		facts: []*facts.Node{ubuntu(nil)},
		want: []string{
			`+ default-shm-size        = "16GiB"`,
			`+ default-ulimits.memlock = "unlimited"`,
			`+ default-ulimits.stack   = "64MiB"`,
			`+ memlock = "unlimited"`,
			`+ stack   = "64MiB"`,
		},
		not: []string{`"65536"`, `"67108864"`, `"-1"`, `"16G"`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			out := renderOne(t, tc.src, tc.facts...)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("missing %q in:\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("unexpected %q in:\n%s", n, out)
				}
			}
		})
	}
}
