// Package preflight checks, before plan diffs a host, that what a node
// block assumes of its hosts holds there: the GPUs its hardware declares,
// the NUMA nodes its binds name, the NICs its GPU-NIC pairing names, a CPU
// architecture and an operating system gpuform installs packages for, and
// the privileges apply needs, and that every package release it installs
// is offered by the host's repositories. A host that fails one cannot be converged by
// apply, so plan reports it as the host's error instead of a plan that
// would fail at its first step. It reads facts and reaches no host.
package preflight

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// Problem is one assumption of the spec that a host does not meet.
type Problem struct {
	// Subject is what was checked ("GPUs", "privileges").
	Subject string
	// Expected is what the spec assumes.
	Expected string
	// Found is what the host has.
	Found string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s: expected %s; found %s", p.Subject, p.Expected, p.Found)
}

// Message is the host error for problems: one line each, under a line
// that says why the host is not planned.
func Message(problems []Problem) string {
	var b strings.Builder
	b.WriteString("the spec cannot be applied to this host:")
	for _, p := range problems {
		b.WriteString("\n    - " + p.String())
	}
	return b.String()
}

// driverArches returns the CPU architectures NVIDIA builds its data-center
// driver packages for (the CUDA repositories' x86_64 and sbsa trees), as
// uname -m names them.
func driverArches() []string { return []string{"x86_64", "aarch64"} }

// Hardware checks what the node block assumes of the host's hardware and
// operating system. Facts the probe could not read (no /sys in an
// unpacked image) are not held against the host. GPU models and PCI device
// IDs are looked up in k.
func Hardware(k *kb.KB, n *spec.Node, f *facts.Node) []Problem {
	var out []Problem
	out = append(out, gpus(k, n, f)...)
	out = append(out, numa(n, f)...)
	out = append(out, nics(n, f)...)
	if needsPackages(n) {
		if f.Arch != "" && !slices.Contains(driverArches(), f.Arch) {
			out = append(out, Problem{"CPU architecture", "one NVIDIA publishes driver packages for (" + strings.Join(driverArches(), " or ") + ")", f.Arch})
		}
		if f.OS.Family() == "" {
			out = append(out, Problem{"operating system", "Debian/Ubuntu (apt) or the RHEL family (dnf), the systems gpuform installs packages on", osName(f)})
		}
	}
	return out
}

// Privileges checks that apply can change the host: it needs root, which
// a login as root or the inventory's become gives. It is asked only of a
// host with something to apply. The probe runs with the host's become, so
// a become that wants a password has already failed the probe (sudo -n).
func Privileges(h spec.Host, f *facts.Node) []Problem {
	if f.EUID == nil || *f.EUID == 0 {
		return nil
	}
	found := "the probe ran as uid " + strconv.Itoa(*f.EUID) + ", without become"
	if h.Become != "" {
		found = "the probe ran as uid " + strconv.Itoa(*f.EUID) + " although become = \"" + h.Become + "\""
	}
	return []Problem{{"privileges", "root to apply: log in as root, or set become = \"sudo\" in the inventory with a NOPASSWD sudo rule for the login user", found}}
}

func gpus(k *kb.KB, n *spec.Node, f *facts.Node) []Problem {
	hw := n.Hardware
	if hw == nil || hw.GPUCount <= 0 {
		return nil
	}
	found := f.NVIDIAGPUs()
	var out []Problem
	label := ""
	if hw.Name != "" {
		label = " (hardware " + strconv.Quote(hw.Name) + ")"
	}
	if len(found) != hw.GPUCount {
		out = append(out, Problem{"GPUs", fmt.Sprintf("%d %s GPUs%s", hw.GPUCount, hw.GPUModel, label), fmt.Sprintf("%d NVIDIA %s on the PCI bus%s", len(found), plural(len(found), "GPU", "GPUs"), listGPUs(k, found))})
	}
	want, ok := k.GPU(hw.GPUModel)
	if !ok || len(found) == 0 {
		return out
	}
	// Each distinct model on the bus that is known and not the declared one.
	other := map[string][]string{}
	for _, d := range found {
		got, known := k.GPUByPCIID(d.Device)
		if known && got.Model.Name != want.Name {
			other[got.Model.Name] = append(other[got.Model.Name], d.Address)
		}
	}
	for _, m := range sortedKeys(other) {
		out = append(out, Problem{"GPU model", fmt.Sprintf("%s%s", hw.GPUModel, label), fmt.Sprintf("%s at %s", m, strings.Join(other[m], ", "))})
	}
	return out
}

// listGPUs names the GPUs found with their device IDs, so a wrong count
// also says which GPUs are there.
func listGPUs(k *kb.KB, gs []facts.PCIDevice) string {
	if len(gs) == 0 {
		return ""
	}
	ids := map[string]int{}
	for _, g := range gs {
		ids[g.Device]++
	}
	var parts []string
	for _, id := range sortedKeys(ids) {
		name := "device " + id
		if d, ok := k.GPUByPCIID(id); ok {
			name = d.Model.Name
		}
		parts = append(parts, fmt.Sprintf("%d× %s", ids[id], name))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func numa(n *spec.Node, f *facts.Node) []Problem {
	if n.NUMA == nil || len(n.NUMA.Binds) == 0 || len(f.NUMA) == 0 {
		return nil
	}
	have := map[int]bool{}
	var ids []string
	for _, node := range f.NUMA {
		have[node.ID] = true
		ids = append(ids, strconv.Itoa(node.ID))
	}
	var out []Problem
	for _, b := range n.NUMA.Binds {
		if !b.Node.Set || have[b.Node.V] {
			continue
		}
		gpus := make([]string, len(b.GPUs))
		for i, g := range b.GPUs {
			gpus[i] = strconv.Itoa(g.V)
		}
		expected := fmt.Sprintf("NUMA node %d for GPUs %s (numa bind)", b.Node.V, strings.Join(gpus, ", "))
		if n.Hardware != nil && n.Hardware.NUMANodes > 0 {
			expected += fmt.Sprintf(", of the %d NUMA nodes of the hardware", n.Hardware.NUMANodes)
		}
		out = append(out, Problem{"NUMA nodes", expected, fmt.Sprintf("%d NUMA %s (%s)", len(f.NUMA), plural(len(f.NUMA), "node", "nodes"), strings.Join(ids, ", "))})
	}
	return out
}

func nics(n *spec.Node, f *facts.Node) []Problem {
	if n.Affinity == nil || len(n.Affinity.GPUNIC) == 0 {
		return nil
	}
	known := map[string]bool{}
	for _, d := range f.RDMA {
		known[d.Name] = true
	}
	for _, d := range f.NICs() {
		for _, nd := range d.NetDevs {
			known[nd] = true
		}
	}
	missing := map[string][]string{}
	for gpu, nic := range n.Affinity.GPUNIC {
		if !known[nic.V] {
			missing[nic.V] = append(missing[nic.V], strconv.Itoa(gpu))
		}
	}
	var out []Problem
	for _, nic := range sortedKeys(missing) {
		gs := missing[nic]
		sort.Slice(gs, func(i, j int) bool { a, _ := strconv.Atoi(gs[i]); b, _ := strconv.Atoi(gs[j]); return a < b })
		out = append(out, Problem{"NICs", fmt.Sprintf("NIC %q for GPU %s (affinity gpu_nic)", nic, strings.Join(gs, ", ")), "no RDMA device or network interface of that name; the host has " + nicList(f)})
	}
	return out
}

func nicList(f *facts.Node) string {
	var names []string
	for _, d := range f.RDMA {
		names = append(names, d.Name)
	}
	if len(names) == 0 {
		for _, d := range f.NICs() {
			names = append(names, d.NetDevs...)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// needsPackages reports whether the node installs packages (NVIDIA's, or
// a container runtime's).
func needsPackages(n *spec.Node) bool {
	return n.Driver != nil || n.CUDA != nil || n.NCCL != nil || n.DCGM != nil ||
		(n.Container != nil && (n.Container.NvidiaContainerToolkit.Set || n.Container.EnrootVersion.Set || n.Container.PyxisVersion.Set || n.Container.ApptainerVersion.Set))
}

func osName(f *facts.Node) string {
	switch {
	case f.OS.Pretty != "":
		return f.OS.Pretty
	case f.OS.ID != "":
		return f.OS.ID
	}
	return "an operating system without /etc/os-release"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// MissingRelease is a package release a resource's change installs that
// the host's repositories do not offer.
type MissingRelease struct {
	// Resource is the change's resource ("enroot_package").
	Resource string
	resource.Missing
}

// Packages turns the releases no repository of the host offers into
// problems, each naming the package, the release, what the repositories
// offer of it instead, the package manager and its repositories, so that
// plan refuses the host before apply's first step instead of failing at
// the step that installs it. offers is what the host's package manager
// said (facts.QueryOffers).
func Packages(missing []MissingRelease, offers *facts.Offers) []Problem {
	if len(missing) == 0 || offers == nil {
		return nil
	}
	var out []Problem
	for _, m := range missing {
		found := "no repository " + offers.Manager + " uses on this host offers it: "
		if len(m.Offered) > 0 {
			found += offers.Manager + " offers " + m.Package + " " + strings.Join(m.Offered, ", ")
		} else {
			found += offers.Manager + " offers no version of " + m.Package
		}
		found += " (" + repositories(offers) + "; "
		if offers.Manager == "apt" {
			found += "read from apt's package lists as they are: if the release was published since they were refreshed, run apt-get update on the host and plan again)"
		} else {
			found += "read from dnf's cached metadata: if the release was published since it was refreshed, run dnf makecache on the host and plan again)"
		}
		if m.Hint != "" {
			found += ". " + m.Hint
		}
		out = append(out, Problem{"package release", m.Package + " " + m.Release + " (" + m.Resource + ") from a repository of the host", found})
	}
	return out
}

// repositories names the repositories the host's package manager is
// configured with, as far as the query could read them.
func repositories(o *facts.Offers) string {
	if len(o.Sources) == 0 {
		if o.Manager == "dnf" {
			return "repositories: none readable in /etc/yum.repos.d"
		}
		return "repositories: none readable in /etc/apt/sources.list or /etc/apt/sources.list.d"
	}
	return "repositories: " + strings.Join(o.Sources, ", ")
}
