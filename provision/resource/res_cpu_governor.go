package resource

import (
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
)

// cpuGovernorReads declares what cpu_governor reads back on a node: the
// pending marker of an interrupted write (in pendingDir) and its tmpfiles.d
// file.
func cpuGovernorReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{GovernorFile}, ManagedDirs: []string{pendingDir}}
}

// buildCPUGovernor sets the spec's cpufreq governor now and at boot.
func buildCPUGovernor(in *buildInput) ([]Resource, []string, error) {
	if !in.n.CPUGovernor.Set {
		// No governor wanted any more: drop the boot-time setting gpuform
		// wrote; the running governor stays until the next boot.
		return []Resource{absentFile(CPUGovernor, GovernorFile)}, nil, nil
	}
	g, err := governorResource(in.n.CPUGovernor.V, header(in.n))
	if err != nil {
		return nil, nil, err
	}
	return []Resource{g}, nil, nil
}

// governorResource sets the cpufreq governor on every CPU now, and at boot
// through systemd-tmpfiles (which writes sysfs files with 'w' lines).
func governorResource(gov, header string) (*fileResource, error) {
	if err := check(governorPattern, "CPU governor", gov); err != nil {
		return nil, err
	}
	content := header + "w /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor - - - - " + gov + "\n"
	return &fileResource{
		base:    base{name: CPUGovernor},
		path:    GovernorFile,
		content: content,
		current: managedFile(GovernorFile),
		attrs: func(f *facts.Node, _ string, exists bool) Values {
			return Values{"governor": StringVal(strings.Join(f.CPU.Governors, ",")), "set_at_boot": BoolVal(exists)}
		},
		desired: Values{"governor": StringVal(gov), "set_at_boot": BoolVal(true)},
		live: func(f *facts.Node) bool {
			// No cpufreq (VMs, some BIOS settings): nothing to set.
			return len(f.CPU.Governors) == 0 || len(f.CPU.Governors) == 1 && f.CPU.Governors[0] == gov
		},
		// Each CPU's file is resolved inside the root, as every write is.
		post: []Step{{Description: "set the " + gov + " governor on every CPU",
			Script: resolvingScript(cpuGovernorScript, gov), Become: true}},
	}, nil
}
