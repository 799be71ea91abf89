package resource

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/facts"
)

// Each resource makes its attributes with their kind: a package hold, a
// boot-time setting and a loaded module are booleans, a huge page count
// and an MTU numbers, a sysctl value and a version text. The plan's JSON
// writes them from these kinds (no table of attribute names decides).
func TestAttributeKinds(t *testing.T) {
	f := debianNode()
	f.Packages.Installed["nvidia-driver-550"] = facts.Package{Version: "550.127.08-0ubuntu1", Held: true}
	f.CPU.Governors = []string{"powersave"}
	got, _ := diffAll(t, loadNode(t, `driver {
  version = "550.127.08"
  peermem = true
}
hugepages {
  size  = "2MiB"
  count = 1024
}
cpu_governor = "performance"
sysctl = { "vm.swappiness" = "1" }`), f)
	kinds := map[string]Kind{}
	for _, a := range []struct{ res, attr string }{
		{DriverPackage, "held"}, {DriverPackage, "version"}, {HugePages, "count"}, {CPUGovernor, "set_at_boot"},
		{CPUGovernor, "governor"}, {NvidiaPeermem, "loaded"}, {NvidiaPeermem, "load_at_boot"}, {Sysctl, "vm.swappiness"},
	} {
		c := got[a.res]
		for side, m := range map[string]Values{"before": c.Before, "after": c.After} {
			if v, ok := m[a.attr]; ok {
				kinds[a.res+"."+a.attr+" "+side] = v.Kind
			}
		}
	}
	want := map[string]Kind{
		"driver_package.held before": Bool, "driver_package.held after": Bool,
		"driver_package.version before": String, "driver_package.version after": String,
		"hugepages.count before": Number, "hugepages.count after": Number,
		"cpu_governor.set_at_boot before": Bool, "cpu_governor.set_at_boot after": Bool,
		"cpu_governor.governor before": String, "cpu_governor.governor after": String,
		"nvidia_peermem.loaded before": Bool, "nvidia_peermem.loaded after": Bool,
		"nvidia_peermem.load_at_boot before": Bool, "nvidia_peermem.load_at_boot after": Bool,
		"sysctl.vm.swappiness after": String,
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("attribute kinds (-want +got):\n%s", diff)
	}
}

func TestValueConstructors(t *testing.T) {
	got := []Value{StringVal("512"), BoolVal(true), BoolVal(false), NumberVal(512), NumberVal(int64(-1)), NumberVal(uint64(1) << 63)}
	want := []Value{{String, "512"}, {Bool, "true"}, {Bool, "false"}, {Number, "512"}, {Number, "-1"}, {Number, "9223372036854775808"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	// A diff compares kind and text: the same text of another kind is a change.
	if diffAction(Values{"n": StringVal("1")}, Values{"n": NumberVal(1)}) != Update {
		t.Error("text \"1\" and number 1 compare equal")
	}
}
