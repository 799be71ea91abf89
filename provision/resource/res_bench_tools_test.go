package resource

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
)

// TestBenchTools: the tools install as the distribution's packages, not
// pinned and not held; installed ones are converged whatever their
// release; a tool without a package on the family is a warning, not a
// package name made up.
func TestBenchTools(t *testing.T) {
	body := `bench { tools = ["perftest", "fio", "nvbandwidth"] }`
	rhel := func() *facts.Node {
		f := debianNode()
		f.OS = facts.OS{ID: "rocky", IDLike: []string{"rhel", "centos", "fedora"}, VersionID: "9.4"}
		f.Packages.Manager = facts.ManagerRPM
		return f
	}
	tests := map[string]struct {
		node        func() *facts.Node
		installed   map[string]facts.Package
		action      Action
		packages    string
		install     string
		noHold      bool
		warningWith string
	}{
		"debian, none installed": {node: debianNode, action: Create, packages: "perftest, fio, nvbandwidth",
			install: `apt_install.sh 120 '' '' '' /var/lib/gpuform/apt-holds perftest '*' fio '*' nvbandwidth '*' --`},
		"debian, one missing": {node: debianNode, installed: map[string]facts.Package{"perftest": {Version: "4.4+0.37-1"}, "fio": {Version: "3.28-1"}},
			action: Update, packages: "perftest 4.4+0.37, fio 3.28, nvbandwidth", install: `apt_install.sh 120 '' '' '' /var/lib/gpuform/apt-holds perftest '*' fio '*' nvbandwidth '*' --`},
		"debian, all installed": {node: debianNode, installed: map[string]facts.Package{"perftest": {Version: "4.4+0.37-1"}, "fio": {Version: "3.28-1"}, "nvbandwidth": {Version: "0.9+ds-2"}},
			action: NoOp},
		"rhel, nvbandwidth has no package": {node: rhel, action: Create, packages: "perftest, fio",
			install: "dnf_install.sh '' perftest fio -- perftest fio", warningWith: "bench tool nvbandwidth not installed: no package of it is known"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := tc.node()
			for k, v := range tc.installed {
				f.Packages.Installed[k] = v
			}
			got, warnings := diffAll(t, loadNode(t, body), f)
			c, ok := got[BenchTools]
			if !ok {
				t.Fatalf("no %s resource: %v", BenchTools, got)
			}
			if c.Action != tc.action {
				t.Fatalf("action %s, want %s: %+v", c.Action, tc.action, c)
			}
			if _, ok := c.After["held"]; ok {
				t.Errorf("bench tools are held: %v", c.After)
			}
			if v, ok := c.After["version"]; ok {
				t.Errorf("a version %q is wanted: %v", v.Text, c.After)
			}
			if tc.action == NoOp {
				if len(c.Steps) != 0 {
					t.Errorf("converged, but steps: %+v", c.Steps)
				}
				return
			}
			if c.After["packages"] != StringVal(tc.packages) {
				t.Errorf("packages %q, want %q", c.After["packages"].Text, tc.packages)
			}
			calls := callsOf(t, c.Steps)
			if !strings.Contains(calls, tc.install+"\n") {
				t.Errorf("steps do not install with %q:\n%s", tc.install, calls)
			}
			// apt_install.sh's second argument, HOLD, is empty in tc.install.
			if strings.Contains(calls, "apt_hold.sh") || strings.Contains(calls, "dnf_versionlock.sh") {
				t.Errorf("steps hold the tools:\n%s", calls)
			}
			w := strings.Join(warnings, "\n")
			if tc.warningWith != "" && !strings.Contains(w, tc.warningWith) || tc.warningWith == "" && strings.Contains(w, "bench tool") {
				t.Errorf("warnings %q, want one with %q", w, tc.warningWith)
			}
		})
	}
}
