package facts

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

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
// format_version and every host.
func RenderJSON(w io.Writer, hosts []HostFacts) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(Document{FormatVersion: jsonformat.Version, Hosts: hosts})
}

// RenderText writes each host's facts as a short listing for reading.
func RenderText(w io.Writer, hosts []HostFacts) {
	for _, r := range hosts {
		renderHost(w, r)
	}
}

func renderHost(w io.Writer, r HostFacts) {
	fmt.Fprintf(w, "%s\n", r.Host)
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
	if n.Shm.Mounted {
		row("/dev/shm", humanBytes(n.Shm.SizeBytes))
	}
	if n.Docker.Present {
		row("docker runtime", n.Docker.DefaultRuntime())
		row("docker shm", n.Docker.ShmSize())
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
