package facts

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

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
// format_version and every host. It writes the document host by host
// (JSONReport), byte for byte what encoding Document whole would write: a
// fleet's document is tens of megabytes, and encoding it whole held all
// of it, and its buffer's doublings, in memory at once.
func RenderJSON(w io.Writer, hosts []HostFacts) error {
	if len(hosts) == 0 {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(Document{FormatVersion: jsonformat.Version, Hosts: hosts})
	}
	r := NewJSONReport(w, len(hosts))
	for i, h := range hosts {
		r.Add(i, h)
	}
	return r.Close()
}

// JSONReport writes `facts -json` while the hosts are probed: each host's
// entry is encoded as the host is handed over and written as soon as the
// hosts before it are, and its facts are not kept. An entry that must
// wait for an earlier host (a slower one, or one that failed: failures
// are handed over last) waits encoded, never as parsed facts, in a
// temporary file removed as soon as it is made (so nothing is left
// behind, whatever ends gpuform), or in memory when none can be made: a
// fleet's facts are not held until its last host is probed. What it
// writes is byte for byte the Document RenderJSON writes. Safe for
// concurrent use.
type JSONReport struct {
	mu      sync.Mutex
	w       *bufio.Writer
	n, next int
	// enc encodes one entry at a time into buf, which each entry reuses.
	enc *json.Encoder
	buf bytes.Buffer
	// pending are the encoded entries waiting for an earlier host.
	pending map[int]waiting
	// spill holds the waiting entries, up to spillEnd; spillName is its
	// name while it could not be removed yet. noSpill says none can be
	// made, or writing to it failed.
	spill     *os.File
	spillName string
	spillEnd  int64
	noSpill   bool
	err       error
}

// waiting is an encoded entry in the spill file (off, size) or in mem.
type waiting struct {
	off, size int64
	mem       []byte
}

// NewJSONReport starts the document of n hosts on w.
func NewJSONReport(w io.Writer, n int) *JSONReport {
	r := &JSONReport{w: bufio.NewWriter(w), n: n, pending: map[int]waiting{}}
	r.enc = json.NewEncoder(&r.buf)
	r.enc.SetIndent("    ", "  ")
	return r
}

// Add takes host i's entry (0 <= i < n, each once) from any goroutine;
// nothing of h is kept once it returns.
func (r *JSONReport) Add(i int, h HostFacts) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.pending[i]; dup || i < r.next || i >= r.n {
		r.err = cmp.Or(r.err, fmt.Errorf("facts report: host %d of %d handed over twice or out of range (a bug in gpuform)", i, r.n))
		return
	}
	r.buf.Reset()
	if err := r.enc.Encode(h); err != nil {
		r.err = cmp.Or(r.err, err)
		return
	}
	// The encoder ends the entry with a newline, which the document
	// writes after the comma.
	b := bytes.TrimSuffix(r.buf.Bytes(), []byte("\n"))
	if i > r.next {
		r.wait(i, b)
		return
	}
	r.start()
	_, _ = r.w.Write(b)
	r.next++
	for {
		e, ok := r.pending[r.next]
		if !ok {
			return
		}
		delete(r.pending, r.next)
		r.start()
		if e.mem != nil {
			_, _ = r.w.Write(e.mem)
		} else if _, err := io.Copy(r.w, io.NewSectionReader(r.spill, e.off, e.size)); err != nil {
			r.err = cmp.Or(r.err, fmt.Errorf("facts report: reading back the facts of a host: %w", err))
		}
		r.next++
	}
}

// start writes what comes before the next host's entry; a bufio.Writer
// keeps its first error and returns it from Flush.
func (r *JSONReport) start() {
	if r.next == 0 {
		version, _ := json.Marshal(jsonformat.Version)
		fmt.Fprintf(r.w, "{\n  \"format_version\": %s,\n  \"hosts\": [\n    ", version)
		return
	}
	_, _ = r.w.WriteString(",\n    ")
}

// wait keeps host i's encoded entry b until the hosts before it are
// written.
func (r *JSONReport) wait(i int, b []byte) {
	if r.spill == nil && !r.noSpill {
		f, err := os.CreateTemp("", "gpuform-facts-*.json")
		if err != nil {
			r.noSpill = true
		} else {
			r.spill = f
			if os.Remove(f.Name()) != nil {
				r.spillName = f.Name()
			}
		}
	}
	if r.spill != nil && !r.noSpill {
		if _, err := r.spill.WriteAt(b, r.spillEnd); err == nil {
			r.pending[i] = waiting{off: r.spillEnd, size: int64(len(b))}
			r.spillEnd += int64(len(b))
			return
		}
		r.noSpill = true
	}
	r.pending[i] = waiting{mem: bytes.Clone(b)}
}

// Close ends the document; it fails when a host was never handed over
// or could not be encoded, or when writing failed.
func (r *JSONReport) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spill != nil {
		_ = r.spill.Close()
		if r.spillName != "" {
			_ = os.Remove(r.spillName)
		}
		r.spill, r.noSpill = nil, true
	}
	if r.err != nil {
		return r.err
	}
	switch {
	case r.n == 0:
		enc := json.NewEncoder(r.w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(Document{FormatVersion: jsonformat.Version, Hosts: []HostFacts{}}); err != nil {
			return err
		}
	case r.next < r.n:
		return fmt.Errorf("facts report: %d of %d hosts were handed over (a bug in gpuform)", r.next, r.n)
	default:
		_, _ = r.w.WriteString("\n  ]\n}\n")
	}
	return r.w.Flush()
}

// RenderText writes the fleet table (host | OS | kernel | driver | CUDA |
// NCCL | GPUs | status), then each distinct listing once under the hosts
// that share it (folded Slurm style, as plan folds identical hosts): 32
// unreachable hosts with one error read as one block, not 32.
func RenderText(w io.Writer, hosts []HostFacts) {
	r := NewTextReport(len(hosts))
	for i, h := range hosts {
		r.Add(i, h)
	}
	r.Render(w)
}

// TextReport collects what RenderText prints of each host while the
// hosts are probed: its table row and its listing, not its facts. The
// hosts of a fleet mostly list the same, and a listing is held once
// however many hosts print it. Safe for concurrent use.
type TextReport struct {
	mu    sync.Mutex
	hosts []textHost
	// texts holds each distinct text once.
	texts map[string]string
}

// textHost is what the text report prints of one host.
type textHost struct {
	name, listing string
	row           Row
}

// NewTextReport starts the report of n hosts.
func NewTextReport(n int) *TextReport {
	return &TextReport{hosts: make([]textHost, n), texts: map[string]string{}}
}

// Add takes host i's result (0 <= i < n) from any goroutine; nothing of
// h's facts is kept once it returns.
func (r *TextReport) Add(i int, h HostFacts) {
	var b strings.Builder
	renderHost(&b, h)
	row := TableRow(h)
	r.mu.Lock()
	defer r.mu.Unlock()
	// A value of the facts may be a piece of the probe's whole output,
	// which it would keep: each text is held as a copy of its own, once.
	one := func(s string) string {
		if c, ok := r.texts[s]; ok {
			return c
		}
		c := strings.Clone(s)
		r.texts[c] = c
		return c
	}
	for _, f := range []*string{&row.OS, &row.Kernel, &row.Driver, &row.CUDA, &row.NCCL, &row.GPUs, &row.Status} {
		*f = one(*f)
	}
	r.hosts[i] = textHost{name: one(h.Host), listing: one(b.String()), row: row}
}

// Render writes the report of the hosts handed over.
func (r *TextReport) Render(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	renderTable(w, r.hosts)
	fmt.Fprintln(w)
	for _, g := range hostrange.GroupBy(r.hosts, func(h textHost) string { return h.listing }) {
		names := make([]string, len(g.Items))
		for i, h := range g.Items {
			names[i] = h.name
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

func renderTable(w io.Writer, hosts []textHost) {
	type line struct {
		host string
		cols []string
	}
	var rows []line
	groups := hostrange.GroupBy(hosts, func(h textHost) string {
		r := h.row
		return strings.Join([]string{r.OS, r.Kernel, r.Driver, r.CUDA, r.NCCL, r.GPUs, r.Status}, "\x00")
	})
	for _, g := range groups {
		names := make([]string, len(g.Items))
		for i, h := range g.Items {
			names[i] = h.name
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
