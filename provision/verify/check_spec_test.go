package verify

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// specNode loads a node block that manages a sysctl and a kernel argument.
func specNode(t testing.TB) *spec.Node {
	t.Helper()
	src := `
node "n" {
  hosts       = ["gpu1"]
  sysctl      = { "vm.swappiness" = "1" }
  kernel_args = ["iommu=pt"]
}`
	cfg, diags := spec.LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(src)}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return cfg.Nodes[0]
}

// convergedFacts is a host on which apply has written what n asks for,
// each file as the resource's own step writes it, and the settings are
// live; grub's drop-in is in place but the running kernel predates it
// unless booted.
func convergedFacts(t testing.TB, n *spec.Node, booted bool) *facts.Node {
	t.Helper()
	f := &facts.Node{OS: facts.OS{ID: "ubuntu", VersionID: "22.04"}, Sysctls: map[string]string{"vm.swappiness": "60"}, ManagedFiles: map[string]facts.File{}}
	changes, _, err := plan.Diff(testKB, n, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range changes {
		for _, st := range rc.Steps {
			for _, path := range []string{resource.SysctlFile, resource.GrubDropIn} {
				if st.Input != "" && strings.Contains(st.Description, path) {
					f.ManagedFiles[path] = facts.NewFile(st.Input)
				}
			}
		}
	}
	if len(f.ManagedFiles) != 2 {
		t.Fatalf("steps wrote %d of the 2 files", len(f.ManagedFiles))
	}
	f.Sysctls["vm.swappiness"] = "1"
	if booted {
		f.Kernel.Cmdline = []string{"ro", "iommu=pt"}
	}
	return f
}

type specResult struct{ ID, Status, Observed, Expected string }

func specResults(results []CheckResult) []specResult {
	var out []specResult
	for _, r := range results {
		if strings.HasPrefix(r.ID, "spec.") {
			out = append(out, specResult{r.ID, string(r.Status), r.Observed, r.Expected})
		}
	}
	return out
}

// TestSpecChecks: the spec.* checks pass exactly when plan has nothing to
// do, name each drifted attribute with both values, and make a pending
// reboot a failure of its own.
func TestSpecChecks(t *testing.T) {
	n := specNode(t)
	cmdlineOK := specResult{"spec.kernel_cmdline", "pass", "args=iommu=pt", "args=iommu=pt"}
	tests := []struct {
		name  string
		facts func() *facts.Node
		want  []specResult
	}{
		{"converged", func() *facts.Node { return convergedFacts(t, n, true) }, []specResult{
			{"spec.compare", "pass", "2 resource(s) compared", "the spec's resources compared with the host"},
			{"spec.reboot_pending", "pass", "nothing waits for a reboot", "what is installed is what runs"},
			{"spec.sysctl", "pass", "vm.swappiness=1", "vm.swappiness=1"},
			cmdlineOK,
		}},
		{"live value drifted", func() *facts.Node {
			f := convergedFacts(t, n, true)
			f.Sysctls["vm.swappiness"] = "60"
			return f
		}, []specResult{
			{"spec.compare", "pass", "2 resource(s) compared", "the spec's resources compared with the host"},
			{"spec.reboot_pending", "pass", "nothing waits for a reboot", "what is installed is what runs"},
			{"spec.sysctl", "fail", "vm.swappiness=60", "vm.swappiness=1"},
			cmdlineOK,
		}},
		{"file removed", func() *facts.Node {
			f := convergedFacts(t, n, true)
			delete(f.ManagedFiles, resource.SysctlFile)
			return f
		}, []specResult{
			{"spec.compare", "pass", "2 resource(s) compared", "the spec's resources compared with the host"},
			{"spec.reboot_pending", "pass", "nothing waits for a reboot", "what is installed is what runs"},
			{"spec.sysctl", "fail", "absent", "vm.swappiness=1"},
			cmdlineOK,
		}},
		{"not booted", func() *facts.Node { return convergedFacts(t, n, false) }, []specResult{
			{"spec.compare", "pass", "2 resource(s) compared", "the spec's resources compared with the host"},
			{"spec.reboot_pending", "fail", "waiting: kernel_cmdline", "what is installed is what runs"},
			{"spec.sysctl", "pass", "vm.swappiness=1", "vm.swappiness=1"},
			{"spec.kernel_cmdline", "pass", "args=iommu=pt", "args=iommu=pt"},
		}},
		{"no probe facts", func() *facts.Node { return nil }, []specResult{
			{"spec.compare", "error", "", "the spec's resources compared with the host"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := Expectation{KB: testKB, Spec: n}
			got := specResults(Check(exp, nil, HostFacts{Facts: tt.facts()}))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// An expectation made without a spec has no spec.* checks.
	if got := specResults(Check(Expectation{KB: testKB}, nil, HostFacts{Facts: convergedFacts(t, n, true)})); got != nil {
		t.Errorf("no spec, yet %v", got)
	}
}

// TestSpecChecksSensitive: a drifted setting whose value is sensitive is
// named, its values hidden on both sides (the live value is the secret
// once applied).
func TestSpecChecksSensitive(t *testing.T) {
	src := `
variable "secret" {
  type      = string
  default   = "17"
  sensitive = true
}
node "n" {
  hosts  = ["gpu1"]
  sysctl = { "vm.swappiness" = var.secret }
}`
	cfg, diags := spec.LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(src)}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	n := cfg.Nodes[0]
	f := &facts.Node{OS: facts.OS{ID: "ubuntu", VersionID: "22.04"}, Sysctls: map[string]string{"vm.swappiness": "60"}, ManagedFiles: map[string]facts.File{}}
	found := false
	for _, r := range Check(expectationWithKB(n), nil, HostFacts{Facts: f}) {
		if strings.Contains(r.Observed+r.Expected+r.Message, "17") {
			t.Errorf("%s shows the secret: %+v", r.ID, r)
		}
		if r.ID == "spec.sysctl" {
			found = true
			if r.Status != StatusFail || r.Expected != "vm.swappiness="+spec.Redacted {
				t.Errorf("spec.sysctl: %+v", r)
			}
		}
	}
	if !found {
		t.Error("no spec.sysctl check")
	}
}

// TestSpecCheckUnrecordedIsNotDrift: a resource that is as the spec says but
// carries no ownership record (converged by hand or by an older gpuform)
// passes; plan shows the adoption, verify has nothing to fail.
func TestSpecCheckUnrecordedIsNotDrift(t *testing.T) {
	v := func(s string) plan.Value { return plan.Value{Value: resource.StringVal(s)} }
	adopt := plan.ResourceChange{Change: resource.Change{Resource: "sysctl", Action: resource.Update},
		Before: plan.Attrs{"vm.swappiness": v("1"), plan.ManagedBy: v("(no record)")},
		After:  plan.Attrs{"vm.swappiness": v("1"), plan.ManagedBy: v("prov")}}
	if r := resourceCheck(adopt); r.Status != StatusPass {
		t.Errorf("adoption only: %s %s", r.Status, r.Message)
	}
	drift := adopt
	drift.After = plan.Attrs{"vm.swappiness": v("10"), plan.ManagedBy: v("prov")}
	if r := resourceCheck(drift); r.Status != StatusFail || !strings.Contains(r.Message, "vm.swappiness") {
		t.Errorf("drift with adoption: %s %s", r.Status, r.Message)
	}
}

// TestSpecCheckSizesAsThePlanWritesThem: a limit that drifted reads as
// the plan shows it ("stack=64MiB", not limits.conf's KiB count), and the
// JSON keeps the file's own text beside it (observed_raw, expected_raw).
func TestSpecCheckSizesAsThePlanWritesThem(t *testing.T) {
	t.Parallel()
	v := func(s string) plan.Value { return plan.Value{Value: resource.StringVal(s)} }
	drift := plan.ResourceChange{Change: resource.Change{Resource: resource.Limits, Action: resource.Update},
		Before: plan.Attrs{"stack": v("8192"), "nofile": v("1048576")},
		After:  plan.Attrs{"stack": v("65536"), "nofile": v("1048576")}}
	r := resourceCheck(drift)
	got := []string{r.Observed, r.Expected, r.ObservedRaw, r.ExpectedRaw}
	want := []string{"stack=8MiB", "stack=64MiB", "stack=8192", "stack=65536"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("observed, expected, raw (-want +got):\n%s", diff)
	}
	// Nothing that is not a size changes, and then no raw copy is kept.
	same := plan.ResourceChange{Change: resource.Change{Resource: "sysctl", Action: resource.Update},
		Before: plan.Attrs{"vm.swappiness": v("1")}, After: plan.Attrs{"vm.swappiness": v("10")}}
	if r := resourceCheck(same); r.Observed != "vm.swappiness=1" || r.ObservedRaw != "" || r.ExpectedRaw != "" {
		t.Errorf("sysctl: %+v", r)
	}
}
