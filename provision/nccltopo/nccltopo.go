// Package nccltopo decides whether a host needs an NCCL topology file
// (NCCL_TOPO_FILE) and renders one from the spec's hardware description:
// NCCL's <system><cpu><pci>… XML, the format cloud providers ship for
// their GPU VMs (Azure's ndv4-topo.xml, AWS's p4d/p5 files in
// aws-ofi-nccl). On a virtual machine the PCI tree the hypervisor shows is
// flattened (every GPU and NIC on its own virtual root port), so NCCL,
// which reads locality from /sys, sees every GPU–NIC pair as PHB or SYS
// and picks NICs badly; the file tells it the real layout.
//
// It is not the resource that writes the file (provision/resource) and
// it never decides for bare metal, where NCCL's own detection is right.
package nccltopo

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/internal/cpulist"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// File is where the topology file is written; /etc/gpuform is read whole
// by the facts probe, so plan diffs it like every managed file.
const File = "/etc/gpuform/nccl-topo.xml"

// Decide reports whether node n's topology file belongs on the host with
// facts f. why says, when n asks for the file and it is not written, the
// reason, for plan to show.
func Decide(n *spec.Node, f *facts.Node) (write bool, why string) {
	if n.Affinity == nil || !n.Affinity.NCCLTopoFile.V {
		return false, ""
	}
	if f.Hypervisor == "" {
		return false, "this host is not a virtual machine: on bare metal NCCL reads the real PCI tree, and a topology file would only hide it"
	}
	if n.Hardware == nil || len(n.Hardware.GPUs) == 0 {
		return false, "the node's hardware description lists no GPUs to place"
	}
	var missing []string
	for _, a := range addresses(n.Hardware) {
		if _, ok := pciDevice(f, a); !ok {
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		return false, fmt.Sprintf("the hardware description's PCI addresses %s are not on this host (a VM's addresses differ from bare metal's: describe the VM's, e.g. with gpuform import)", strings.Join(missing, ", "))
	}
	if pair, ok := sharedBridge(f); ok {
		return false, fmt.Sprintf("this VM's PCI tree shows %s under one bridge: NCCL's own detection sees the layout", pair)
	}
	return true, ""
}

// addresses lists the PCI addresses of the hardware's GPUs and RDMA NICs,
// lower case, in order.
func addresses(hw *spec.Hardware) []string {
	var out []string
	for _, g := range hw.GPUs {
		if g.PCI != "" {
			out = append(out, strings.ToLower(g.PCI))
		}
	}
	for _, nic := range rdmaNICs(hw) {
		out = append(out, strings.ToLower(nic.PCI))
	}
	return out
}

func rdmaNICs(hw *spec.Hardware) []spec.HardwareNIC {
	var out []spec.HardwareNIC
	for _, nic := range hw.NICs {
		if nic.PCI != "" && (nic.RDMA || nic.Link == "infiniband" || nic.Link == "roce") {
			out = append(out, nic)
		}
	}
	return out
}

func pciDevice(f *facts.Node, addr string) (facts.PCIDevice, bool) {
	for _, d := range f.PCI {
		if strings.EqualFold(d.Address, addr) {
			return d, true
		}
	}
	return facts.PCIDevice{}, false
}

// sharedBridge finds a GPU and an RDMA NIC of the host that share a PCI
// bridge: a tree that is not flattened.
func sharedBridge(f *facts.Node) (string, bool) {
	for _, g := range f.PCI {
		if g.Kind != facts.KindGPU {
			continue
		}
		for _, n := range f.PCI {
			if len(n.RDMADevs) == 0 {
				continue
			}
			if facts.CommonParent(g, n) != "" {
				return fmt.Sprintf("GPU %s and NIC %s", g.Address, n.Address), true
			}
		}
	}
	return "", false
}

// device is one endpoint of the file.
type device struct {
	busID, class string
	gen, width   int
	numa         int
	group        string
}

// Render builds the topology file for hardware hw on the host with facts
// f: one <cpu> per NUMA node with its CPUs as NCCL's affinity mask, under
// it one virtual bridge (class 0x060400, bus ffff:ff:NN.0 as Azure's files
// number them) per PCIe switch of the description holding that switch's
// GPUs and RDMA NICs, and the devices on a CPU root port directly under
// the <cpu>. Class, link speed and width come from the host's PCI facts.
func Render(hw *spec.Hardware, f *facts.Node, header string) (string, error) {
	var devs []device
	add := func(addr string, numa int, sw, defClass string) {
		addr = strings.ToLower(addr)
		d := device{busID: addr, class: defClass, numa: numa, group: sw, width: 16}
		if pd, ok := pciDevice(f, addr); ok {
			d.class = cmp.Or(pd.Class, defClass)
			d.gen = facts.LinkGen(cmp.Or(pd.MaxLinkSpeed, pd.CurrentLinkSpeed))
			d.width = cmp.Or(pd.MaxLinkWidth, pd.CurrentLinkWidth, 16)
		}
		devs = append(devs, d)
	}
	for _, g := range hw.GPUs {
		if g.PCI != "" {
			// A 3D controller, as data-center GPUs enumerate.
			add(g.PCI, g.NUMA, g.Switch, "0x030200")
		}
	}
	for _, nic := range rdmaNICs(hw) {
		class := "0x020000" // Ethernet (RoCE)
		if nic.Link == "infiniband" {
			class = "0x020700"
		}
		add(nic.PCI, nic.NUMA, nic.Switch, class)
	}
	if len(devs) == 0 {
		return "", fmt.Errorf("the hardware description has no GPU or RDMA NIC with a PCI address")
	}
	arch, vendor, err := cpuAttrs(f)
	if err != nil {
		return "", err
	}
	byNUMA := map[int][]device{}
	for _, d := range devs {
		byNUMA[d.numa] = append(byNUMA[d.numa], d)
	}
	var b strings.Builder
	b.WriteString("<!-- " + header + " -->\n")
	b.WriteString("<system version=\"1\">\n")
	bridge := 0
	for _, numa := range slices.Sorted(maps.Keys(byNUMA)) {
		mask, err := affinity(f, numa)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "  <cpu numaid=\"%d\" affinity=\"%s\" arch=\"%s\"%s>\n", numa, mask, arch, vendor)
		groups := map[string][]device{}
		for _, d := range byNUMA[numa] {
			groups[d.group] = append(groups[d.group], d)
		}
		for _, d := range groups[""] {
			writeDevice(&b, "    ", d)
		}
		for _, sw := range slices.Sorted(maps.Keys(groups)) {
			if sw == "" {
				continue
			}
			bridge++
			g := groups[sw]
			// The switch's uplink: as fast and wide as its fastest device.
			gen, width := 0, 0
			for _, d := range g {
				gen, width = max(gen, d.gen), max(width, d.width)
			}
			fmt.Fprintf(&b, "    <pci busid=\"ffff:ff:%02x.0\" class=\"0x060400\" link_speed=\"%s\" link_width=\"%d\">\n", bridge, linkSpeed(gen), width)
			for _, d := range g {
				writeDevice(&b, "      ", d)
			}
			b.WriteString("    </pci>\n")
		}
		b.WriteString("  </cpu>\n")
	}
	b.WriteString("</system>\n")
	return b.String(), nil
}

func writeDevice(b *strings.Builder, indent string, d device) {
	fmt.Fprintf(b, "%s<pci busid=\"%s\" class=\"%s\" link_speed=\"%s\" link_width=\"%d\"/>\n", indent, d.busID, d.class, linkSpeed(d.gen), d.width)
}

// linkSpeed names PCIe generation gen (facts.LinkGen of the sysfs speed)
// in a string NCCL's kvDictPciGen table knows (src/graph/topo.cc): "2.5 GT/s" to
// "32 GT/s", and "64.0 GT/s PCIe" for Gen6, which has no short form there.
// An unknown speed is "", which NCCL reads as its Gen3 default.
func linkSpeed(gen int) string {
	switch gen {
	case 1:
		return "2.5 GT/s"
	case 2:
		return "5 GT/s"
	case 3:
		return "8 GT/s"
	case 4:
		return "16 GT/s"
	case 5:
		return "32 GT/s"
	case 6:
		return "64.0 GT/s PCIe"
	}
	return ""
}

// cpuAttrs are the <cpu> attributes NCCL requires (ncclTopoAddCpu): arch,
// and on x86 the vendor, and on Intel the family and model, which it uses
// to tell Skylake and later from older CPUs.
func cpuAttrs(f *facts.Node) (arch, rest string, err error) {
	switch f.Arch {
	case "x86_64", "amd64":
		arch = "x86_64"
	case "aarch64", "arm64":
		return "arm64", "", nil
	case "ppc64le", "ppc64":
		return "ppc64", "", nil
	default:
		return "", "", fmt.Errorf("CPU architecture %q is not one NCCL's topology file names", f.Arch)
	}
	switch f.CPU.Vendor {
	case "AuthenticAMD":
		return arch, ` vendor="AuthenticAMD"`, nil
	case "GenuineIntel":
		if f.CPU.Family == 0 {
			return "", "", fmt.Errorf("the host's Intel CPU family and model are unknown (/proc/cpuinfo), and NCCL's topology file needs them")
		}
		return arch, fmt.Sprintf(` vendor="GenuineIntel" familyid="%d" modelid="%d"`, f.CPU.Family, f.CPU.ModelID), nil
	}
	return "", "", fmt.Errorf("x86 CPU vendor %q is not one NCCL's topology file names", f.CPU.Vendor)
}

// affinity is NUMA node numa's CPUs as a Linux cpumap, the form NCCL's
// ncclStrToCpuset reads: 32-bit hex words, most significant first, joined
// by commas ("0000ffff,0000ffff").
func affinity(f *facts.Node, numa int) (string, error) {
	var list string
	found := false
	for _, n := range f.NUMA {
		if n.ID == numa {
			list, found = n.CPUs, true
		}
	}
	if !found {
		return "", fmt.Errorf("the hardware description places devices on NUMA node %d, which this host does not have", numa)
	}
	cpus, err := cpulist.Parse(list)
	if err != nil || len(cpus) == 0 {
		return "", fmt.Errorf("NUMA node %d: cpulist %q: %v", numa, list, err)
	}
	words := make([]uint32, slices.Max(cpus)/32+1)
	for _, c := range cpus {
		words[c/32] |= 1 << (c % 32)
	}
	parts := make([]string, len(words))
	for i, w := range words {
		parts[len(words)-1-i] = fmt.Sprintf("%08x", w)
	}
	return strings.Join(parts, ","), nil
}
