package resource

import (
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nicirq"
)

// nicIRQReads declares what nic_irq reads back on a node: the pending marker
// of an interrupted write (in pendingDir) and the IRQ policy script.
func nicIRQReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{nicirq.File}, ManagedDirs: []string{pendingDir}}
}

// buildNICIRQ writes the script that pins each RDMA NIC's interrupts to
// the CPUs of its NUMA node (affinity { nic_irq_affinity }) and runs it;
// plan shows each NIC's IRQs before and after. Without the setting it
// removes a script gpuform wrote earlier. See provision/nicirq for why a
// script and not a list of IRQs.
func buildNICIRQ(in *buildInput) ([]Resource, []string, error) {
	if !nicirq.Wanted(in.n) {
		return []Resource{absentFile(NICIRQ, nicirq.File)}, nil, nil
	}
	groups, warnings := nicirq.Groups(in.f)
	content, err := nicirq.Script(header(in.n), groups)
	if err != nil {
		return nil, nil, err
	}
	want := Values{"script": StringVal("sha256:" + shortSum(content))}
	for _, g := range groups {
		want[g.Label()] = StringVal(g.Want())
	}
	return []Resource{&fileResource{
		base:    base{name: NICIRQ},
		path:    nicirq.File,
		content: content,
		current: managedFile(nicirq.File),
		attrs: func(f *facts.Node, cur string, exists bool) Values {
			out := Values{}
			if exists {
				out["script"] = StringVal("sha256:" + shortSum(cur))
			}
			for _, g := range groups {
				out[g.Label()] = StringVal(nicirq.Summary(g.IRQs))
			}
			return out
		},
		desired: want,
		live: func(*facts.Node) bool {
			for _, g := range groups {
				if !g.Pinned() {
					return false
				}
			}
			return true
		},
		// irqbalance runs the script itself (--policyscript), so it must
		// be executable; a file written earlier keeps its mode.
		then: makeExecutable(nicirq.File),
		// /proc/irq writes are lost at reboot; gpuform-nic-irq.service
		// repeats them at every boot.
		post: []Step{scriptStep("pin the RDMA NICs' interrupts to their NUMA nodes' CPUs", nicIRQPinScript, nicirq.File)},
	}}, warnings, nil
}
