package plan_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/plan"
)

// A resource that will be created reads like Terraform's: every attribute
// line carries "+", never "~" under a "+" block; a live value that the new
// file changes is named in a trailing comment.
func TestRenderCreateShowsOnlyAdditions(t *testing.T) {
	p := &plan.Plan{Hosts: []*plan.HostPlan{{
		Host: "gpu1", Node: "n",
		ResourceChanges: []plan.ResourceChange{{
			Resource: "cpu_governor", Actions: []string{"create"},
			Before: map[string]string{"governor": "powersave", "set_at_boot": "false"},
			After:  map[string]string{"governor": "performance", "set_at_boot": "true"},
		}, {
			Resource: "sysctl", Actions: []string{"create"},
			Before: map[string]string{"vm.swappiness": "1"},
			After:  map[string]string{"vm.swappiness": "1", "kernel.numa_balancing": "0"},
		}},
		Summary: plan.Summary{Add: 2},
	}}, Summary: plan.Summary{Add: 2}}
	var b strings.Builder
	if err := plan.RenderText(&b, p, plan.RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "      ") || strings.HasPrefix(l, "  + ") && strings.HasSuffix(l, "{") {
			got = append(got, l)
		}
	}
	want := []string{
		"  + cpu_governor {",
		`      + governor    = "performance" # now "powersave"`,
		`      + set_at_boot = "true" # now "false"`,
		"  + sysctl {",
		`      + kernel.numa_balancing = "0"`,
		"        # (1 unchanged attribute hidden)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("create block (-want +got):\n%s\n%s", diff, b.String())
	}
}
