// Package nicirq decides where each RDMA NIC's interrupts belong (the CPUs
// of the NIC's NUMA node) and renders the script that puts them there, for
// affinity { nic_irq_affinity }. It reads facts and the spec; it does not
// plan, write or judge: the nic_irq resources in provision/resource and the
// nic.irq_affinity check in provision/verify do.
//
// The script, not a list of IRQ numbers, is what gpuform writes: Linux
// numbers MSI-X vectors as drivers allocate them, so the numbers change
// from boot to boot (and when mlx5_core is reloaded), while a NIC's PCI
// address does not. The script finds the IRQs anew each time it runs, at
// apply and at boot (gpuform-nic-irq.service), and answers irqbalance's
// --policyscript questions with ban=true for the same NICs, so irqbalance
// leaves them where gpuform put them.
package nicirq

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gpuform/gpuform/internal/cpulist"
	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// File is the script gpuform writes; the unit runs it at boot and
// irqbalance asks it which IRQs to leave alone.
const File = "/etc/gpuform/nic-irq.sh"

// Unit is the systemd unit that runs File at every boot.
const Unit = "gpuform-nic-irq.service"

// UnitFile is where Unit is written.
const UnitFile = "/etc/systemd/system/" + Unit

// Wanted reports whether node n asks for its NICs' interrupts pinned.
func Wanted(n *spec.Node) bool {
	return n != nil && n.Affinity != nil && n.Affinity.NICIRQAffinity.V
}

// Group is one RDMA NIC's PCI function and the CPUs its interrupts belong on.
type Group struct {
	// Address is the function's PCI address ("0000:18:00.0").
	Address string
	// Names are its RDMA devices ("mlx5_0").
	Names []string
	// NUMA is the function's NUMA node.
	NUMA int
	// CPUs is that node's CPU list as the host prints it.
	CPUs string
	// IRQs are the function's interrupts as the probe read them.
	IRQs []facts.IRQ
}

// Label names the group in plan and verify output: "mlx5_0 (0000:18:00.0)".
func (g Group) Label() string {
	return strings.Join(g.Names, ",") + " (" + g.Address + ")"
}

// Groups returns every RDMA NIC function of host f with the CPUs of its
// NUMA node, sorted by address. A function whose NUMA node the platform
// does not report, or whose node has no CPUs listed, cannot be pinned: it
// is left out and a warning says why.
func Groups(f *facts.Node) ([]Group, []string) {
	var out []Group
	var warnings []string
	for _, d := range f.PCI {
		if len(d.RDMADevs) == 0 {
			continue
		}
		g := Group{Address: d.Address, Names: d.RDMADevs, NUMA: d.NUMANode, IRQs: d.IRQs}
		if d.NUMANode < 0 {
			warnings = append(warnings, fmt.Sprintf("%s: the platform reports no NUMA node for it; its interrupts are left where they are", g.Label()))
			continue
		}
		for _, nn := range f.NUMA {
			if nn.ID == d.NUMANode {
				g.CPUs = nn.CPUs
			}
		}
		if _, err := cpulist.Parse(g.CPUs); err != nil || g.CPUs == "" {
			warnings = append(warnings, fmt.Sprintf("%s: NUMA node %d lists no CPUs; its interrupts are left where they are", g.Label(), d.NUMANode))
			continue
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, warnings
}

// Summary describes where a group's interrupts may run now: "16 IRQs on
// 0-223", or each distinct CPU list with its count when they differ;
// "no IRQs" for a function without any (its driver is not loaded).
func Summary(irqs []facts.IRQ) string {
	if len(irqs) == 0 {
		return "no IRQs"
	}
	count := map[string]int{}
	for _, q := range irqs {
		c := q.CPUs
		if c == "" {
			c = "unreadable"
		}
		count[c]++
	}
	lists := make([]string, 0, len(count))
	for c := range count {
		lists = append(lists, c)
	}
	// Most IRQs first, so the usual case reads first.
	sort.Slice(lists, func(i, j int) bool {
		if count[lists[i]] != count[lists[j]] {
			return count[lists[i]] > count[lists[j]]
		}
		return lists[i] < lists[j]
	})
	parts := make([]string, len(lists))
	for i, c := range lists {
		parts[i] = fmt.Sprintf("%d on %s", count[c], c)
	}
	return fmt.Sprintf("%d IRQs: %s", len(irqs), strings.Join(parts, ", "))
}

// Want is Summary of the group's interrupts once pinned.
func (g Group) Want() string {
	if len(g.IRQs) == 0 {
		return "no IRQs"
	}
	return fmt.Sprintf("%d IRQs: %d on %s", len(g.IRQs), len(g.IRQs), g.CPUs)
}

// Outside returns the group's IRQs that may run on a CPU outside its NUMA
// node (or whose CPUs could not be read), as "N (CPUs)".
func (g Group) Outside() []string {
	node, err := cpulist.Parse(g.CPUs)
	if err != nil {
		return nil
	}
	var bad []string
	for _, q := range g.IRQs {
		cpus, err := cpulist.Parse(q.CPUs)
		if err != nil || len(cpus) == 0 {
			bad = append(bad, fmt.Sprintf("%d (unreadable)", q.Number))
			continue
		}
		for _, c := range cpus {
			if !slices.Contains(node, c) {
				bad = append(bad, fmt.Sprintf("%d (%s)", q.Number, q.CPUs))
				break
			}
		}
	}
	return bad
}

// Pinned reports whether every IRQ of the group runs exactly on its NUMA
// node's CPUs, as the script sets them.
func (g Group) Pinned() bool {
	for _, q := range g.IRQs {
		if q.CPUs != g.CPUs {
			return false
		}
	}
	return true
}

var (
	addrPattern = lazyre.New(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
	cpusPattern = lazyre.New(`^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$`)
	namePattern = lazyre.New(`^[A-Za-z0-9_.\-]{1,64}$`)
)

// Script renders File for groups, starting with header (a "#" comment).
// `sh File pin [ROOT]` pins every group's IRQs (ROOT, when given, is a
// directory the paths are under: gpuform's simulated nodes);
// `File DEVICE-DIR IRQ`, as irqbalance --policyscript calls it, prints
// ban=true for an IRQ of one of the groups. Values from the host are
// checked before they reach the script.
func Script(header string, groups []Group) (string, error) {
	var pins, cases []string
	for _, g := range groups {
		if !addrPattern.MatchString(g.Address) || !cpusPattern.MatchString(g.CPUs) {
			return "", fmt.Errorf("refusing to write %s: PCI address %q or CPU list %q is not one", File, g.Address, g.CPUs)
		}
		for _, n := range g.Names {
			if !namePattern.MatchString(n) {
				return "", fmt.Errorf("refusing to write %s: RDMA device name %q is not one", File, n)
			}
		}
		pins = append(pins, fmt.Sprintf("\tpin %s %s # %s, NUMA node %d", g.Address, g.CPUs, strings.Join(g.Names, ","), g.NUMA))
		cases = append(cases, g.Address)
	}
	var b strings.Builder
	b.WriteString(header)
	b.WriteString(`# Pins each RDMA NIC's interrupts to the CPUs of the NIC's NUMA node.
# "sh ` + File + ` pin" runs at boot (` + Unit + `) and at apply;
# irqbalance runs it as its --policyscript, with a device's sysfs directory
# and an IRQ, and leaves the IRQs it bans alone. IRQ numbers change from
# boot to boot, PCI addresses do not: the IRQs are looked up each time.
if [ "${1:-}" = pin ]; then
	R=${2:-}
	rc=0
	pin() {
		for i in "$R/sys/bus/pci/devices/$1/msi_irqs/"*; do
			[ -e "$i" ] || continue
			if ! echo "$2" >"$R/proc/irq/${i##*/}/smp_affinity_list"; then
				echo "gpuform-nic-irq: IRQ ${i##*/} of $1 cannot be moved to CPUs $2" >&2
				rc=1
			fi
		done
	}
`)
	for _, p := range pins {
		b.WriteString(p + "\n")
	}
	b.WriteString("\texit $rc\nfi\n")
	if len(cases) > 0 {
		b.WriteString("case ${1##*/} in\n" + strings.Join(cases, " | ") + ") echo ban=true ;;\nesac\n")
	}
	b.WriteString("exit 0\n")
	return b.String(), nil
}

// UnitText renders UnitFile, starting with header.
func UnitText(header string) string {
	return header + `[Unit]
Description=gpuform: pin RDMA NIC interrupts to the CPUs of their NUMA node
# The NICs' driver has allocated its interrupts once the network is being
# set up; irqbalance is told by the same script to leave them alone.
After=network-pre.target irqbalance.service
Wants=network-pre.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh ` + File + ` pin

[Install]
WantedBy=multi-user.target
`
}
