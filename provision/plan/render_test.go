package plan_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/resource"
)

// A resource that will be created reads like Terraform's: every attribute
// line carries "+", never "~" under a "+" block; a live value that the new
// file changes is named in a trailing comment.
func TestRenderCreateShowsOnlyAdditions(t *testing.T) {
	p := &plan.Plan{Hosts: []*plan.HostPlan{{
		Host: "gpu1", Node: "n",
		ResourceChanges: []plan.ResourceChange{{
			Change: resource.Change{Resource: "cpu_governor", Action: resource.Create},
			Before: plan.Attrs{"governor": {Text: "powersave"}, "set_at_boot": {Text: "false", Kind: resource.Bool}},
			After:  plan.Attrs{"governor": {Text: "performance"}, "set_at_boot": {Text: "true", Kind: resource.Bool}},
		}, {
			Change: resource.Change{Resource: "sysctl", Action: resource.Create},
			Before: plan.Attrs{"vm.swappiness": {Text: "1"}},
			After:  plan.Attrs{"vm.swappiness": {Text: "1"}, "kernel.numa_balancing": {Text: "0"}},
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
