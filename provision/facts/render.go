package facts

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gpuform/gpuform/internal/spelling"

	"github.com/gpuform/gpuform/internal/hostrange"
	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/provision/transport"
)

// HostFacts is one host's entry in `gpuform facts`: its facts, or why they
// could not be read.
type HostFacts struct {
	// Host is the inventory name (or the root path with -root).
	Host string `json:"host"`
	// Node is the spec's node block the host belongs to.
	Node string `json:"node,omitempty"`
	// Facts is nil when Error is set.
	Facts *Node `json:"facts,omitempty"`
	// Error says why the host could not be probed.
	Error string `json:"error,omitempty"`
}

// Document is the JSON shape of `gpuform facts -json`.
type Document struct {
	// FormatVersion is jsonformat.Version.
	FormatVersion string `json:"format_version"`
	// Hosts holds every host asked for, probed or not.
	Hosts []HostFacts `json:"hosts"`
}

// RenderJSON writes `facts -json`: one document with the shared
// format_version and every host. It writes the document host by host,
// byte for byte what encoding Document whole would write: a fleet's
// document is tens of megabytes, and encoding it whole held all of it,
// and its buffer's doublings, in memory at once.
func RenderJSON(w io.Writer, hosts []HostFacts) error {
	if len(hosts) == 0 {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(Document{FormatVersion: jsonformat.Version, Hosts: hosts})
	}
	version, err := json.Marshal(jsonformat.Version)
	if err != nil {
		return err
	}
	// A bufio.Writer keeps its first error and returns it from Flush.
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\n  \"format_version\": %s,\n  \"hosts\": [\n    ", version)
	for i, h := range hosts {
		if i > 0 {
			_, _ = bw.WriteString(",\n    ")
		}
		b, err := json.MarshalIndent(h, "    ", "  ")
		if err != nil {
			return err
		}
		_, _ = bw.Write(b)
	}
	_, _ = bw.WriteString("\n  ]\n}\n")
	return bw.Flush()
}

// RenderText writes the fleet table (host | OS | kernel | driver | CUDA |
// NCCL | GPUs | status), then each distinct listing once under the hosts
// that share it (folded Slurm style, as plan folds identical hosts): 32
// unreachable hosts with one error read as one block, not 32.
func RenderText(w io.Writer, hosts []HostFacts) {
	renderTable(w, hosts)
	fmt.Fprintln(w)
	type block struct {
		host HostFacts
		text string
	}
	var blocks []block
	for _, h := range hosts {
		var b strings.Builder
		renderHost(&b, h)
		blocks = append(blocks, block{h, b.String()})
	}
	for _, g := range hostrange.GroupBy(blocks, func(b block) string { return b.text }) {
		names := make([]string, len(g.Items))
		for i, b := range g.Items {
			names[i] = b.host.Host
		}
		fmt.Fprintf(w, "%s\n%s", transport.HostText(hostrange.Title(names)), g.Key)
	}
}

// Row is one host's line of the fleet table.
type Row struct {
	// OS is the distribution and version ("ubuntu 22.04").
	OS string
	// Kernel is the running kernel release.
	Kernel string
	// Driver is the loaded NVIDIA driver, "none" when none is loaded.
	Driver string
	// CUDA is the newest CUDA toolkit under /usr/local, "-" when none.
	CUDA string
	// NCCL is the installed NCCL package's version, "-" when none.
	NCCL string
	// GPUs is the number of NVIDIA GPUs on the PCI bus.
	GPUs string
	// Status is "ok", "N warning(s)" or "error".
	Status string
}

// TableRow summarises one host for the fleet table.
func TableRow(h HostFacts) Row {
	if h.Error != "" || h.Facts == nil {
		return Row{OS: "-", Kernel: "-", Driver: "-", CUDA: "-", NCCL: "-", GPUs: "-", Status: "error"}
	}
	n := h.Facts
	r := Row{OS: strings.TrimSpace(n.OS.ID + " " + n.OS.VersionID), Kernel: n.Kernel.Release, Driver: "none", CUDA: "-", NCCL: "-",
		GPUs: fmt.Sprint(len(n.NVIDIAGPUs())), Status: "ok"}
	if r.OS == "" {
		r.OS = "unknown"
	}
	if n.Driver != nil {
		r.Driver = n.Driver.Version
	}
	for _, t := range n.CUDAToolkits {
		// Sorted by path; the last versioned one is the newest install.
		if t.Version != "" {
			r.CUDA = t.Version
		}
	}
	for _, name := range []string{"libnccl2", "libnccl"} {
		if v, ok := n.Package(name); ok {
			r.NCCL = v
			break
		}
	}
	if k := len(n.Warnings); k > 0 {
		r.Status = fmt.Sprintf("%d warning(s)", k)
	}
	return r
}

func renderTable(w io.Writer, hosts []HostFacts) {
	type line struct {
		host string
		cols []string
	}
	var rows []line
	groups := hostrange.GroupBy(hosts, func(h HostFacts) string {
		r := TableRow(h)
		return strings.Join([]string{r.OS, r.Kernel, r.Driver, r.CUDA, r.NCCL, r.GPUs, r.Status}, "\x00")
	})
	for _, g := range groups {
		names := make([]string, len(g.Items))
		for i, h := range g.Items {
			names[i] = h.Host
		}
		cols := strings.Split(g.Key, "\x00")
		for i := range cols {
			cols[i] = transport.HostText(cols[i])
		}
		rows = append(rows, line{transport.HostText(hostrange.Fold(names)), cols})
	}
	head := line{"HOST", []string{"OS", "KERNEL", "DRIVER", "CUDA", "NCCL", "GPUS", "STATUS"}}
	width := make([]int, 8)
	for _, l := range append([]line{head}, rows...) {
		width[0] = max(width[0], len(l.host))
		for i, c := range l.cols {
			width[i+1] = max(width[i+1], len(c))
		}
	}
	for _, l := range append([]line{head}, rows...) {
		parts := []string{fmt.Sprintf("%-*s", width[0], l.host)}
		for i, c := range l.cols {
			parts = append(parts, fmt.Sprintf("%-*s", width[i+1], c))
		}
		fmt.Fprintln(w, strings.TrimRight(strings.Join(parts, "  "), " "))
	}
}

// renderHost writes one host's listing, without its name: RenderText
// prints the listing once for every group of hosts it is identical for.
func renderHost(w io.Writer, r HostFacts) {
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n\n", r.Error)
		return
	}
	n := r.Facts
	// Every value was read on the host: HostText keeps one from forging
	// or erasing lines of this listing.
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %-18s %s\n", k, transport.HostText(v))
		}
	}
	row("os", strings.TrimSpace(n.OS.Pretty+" ("+n.Arch+")"))
	row("kernel", n.Kernel.Release)
	if n.Driver != nil {
		row("driver", n.Driver.Version+" ("+n.Driver.Flavor+")")
	} else {
		row("driver", "not loaded")
	}
	row("cpu", fmt.Sprintf("%s, %d socket(s)", n.CPU.Model, n.CPU.Sockets))
	row("memory", humanBytes(n.MemoryBytes))
	row("numa nodes", fmt.Sprint(len(n.NUMA)))
	row("pci", fmt.Sprintf("%d GPU(s), %d NVSwitch(es), %d NIC(s), %d RDMA device(s)", len(n.NVIDIAGPUs()), len(n.NVSwitches()), len(n.NICs()), len(n.RDMA)))
	for _, d := range n.Displays() {
		row("display", spelling.BusID(d.Address)+" vendor "+d.Vendor+" device "+d.Device+" (not a GPU: a BMC or on-board VGA)")
	}
	if n.Shm.Mounted {
		row("/dev/shm", humanBytes(n.Shm.SizeBytes))
	}
	if n.Docker.Present {
		row("docker runtime", n.Docker.DefaultRuntime())
		shm := n.Docker.ShmSize()
		if t, ok := spelling.Size(shm, 0); ok {
			shm = t // "64m" as the spec writes it: 64MiB
		}
		row("docker shm", shm)
	}
	var pkgs []string
	for name, p := range n.Packages.Installed {
		if strings.Contains(name, "nvidia") || strings.Contains(name, "cuda") || strings.Contains(name, "nccl") || strings.Contains(name, "dcgm") {
			held := ""
			if p.Held {
				held = " (held)"
			}
			pkgs = append(pkgs, name+" "+p.Version+held)
		}
	}
	sort.Strings(pkgs)
	for i, p := range pkgs {
		k := ""
		if i == 0 {
			k = "packages"
		}
		fmt.Fprintf(w, "  %-18s %s\n", k, transport.HostText(p))
	}
	for _, warn := range n.Warnings {
		row("warning", warn)
	}
	fmt.Fprintln(w)
}

// humanBytes renders a byte count with one decimal in the largest binary
// unit, for reading rather than for copying into a spec.
func humanBytes(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}
