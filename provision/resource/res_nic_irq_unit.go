package resource

import (
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nicirq"
)

// nicIRQUnitReads declares what nic_irq_unit reads back on a node: the
// pending marker of an interrupted write (in pendingDir) and the unit file
// it writes and the unit's state.
func nicIRQUnitReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{nicirq.UnitFile}, Units: []string{nicirq.Unit}, ManagedDirs: []string{pendingDir}}
}

// buildNICIRQUnit writes and enables gpuform-nic-irq.service, which runs
// the script at every boot: interrupt affinities set through /proc do not
// survive a reboot. A unit rather than a udev rule: the script must run
// once the driver has allocated its interrupts, and a unit's runs show in
// systemctl status and the journal.
func buildNICIRQUnit(in *buildInput) ([]Resource, []string, error) {
	wants := "/etc/systemd/system/multi-user.target.wants/" + nicirq.Unit
	if !nicirq.Wanted(in.n) {
		r := absentFile(NICIRQUnit, nicirq.UnitFile)
		// The enable link goes with the unit; daemon-reload forgets it.
		r.then = unlinkAndReload(wants)
		return []Resource{r}, nil, nil
	}
	content := nicirq.UnitText(header(in.n))
	return []Resource{&fileResource{
		base:    base{name: NICIRQUnit},
		path:    nicirq.UnitFile,
		content: content,
		current: managedFile(nicirq.UnitFile),
		attrs: func(f *facts.Node, cur string, exists bool) Values {
			out := Values{"enabled": StringVal(f.Unit(nicirq.Unit).Enabled)}
			if exists {
				out["content"] = StringVal("sha256:" + shortSum(cur))
			}
			return out
		},
		desired: Values{"content": StringVal("sha256:" + shortSum(content)), "enabled": StringVal("enabled")},
		live:    func(f *facts.Node) bool { return f.Unit(nicirq.Unit).Enabled == "enabled" },
		then:    daemonReload(),
		post:    []Step{systemdUnitStep("enable "+nicirq.Unit, unitEnable, nicirq.Unit)},
	}}, nil, nil
}
