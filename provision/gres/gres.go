package gres

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/cpulist"
	"github.com/gpuform/gpuform/provision/bind"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// Wanted reports whether node n asks for gres.conf lines.
func Wanted(n *spec.Node) bool { return n.Slurm != nil && n.Slurm.GRES.V }

// Line is one GPU's gres.conf line.
type Line struct {
	// GPU is the NVML index.
	GPU int
	// Comment says where the line comes from, for the operator who reads
	// the file.
	Comment string
	// Fields are the line's Key=value fields after Name=gpu, in order.
	Fields []string
}

// String is the line as gres.conf holds it.
func (l Line) String() string { return "Name=gpu " + strings.Join(l.Fields, " ") }

// Conf is what gpuform writes into a node's gres.conf.
type Conf struct {
	// AutoDetect is the AutoDetect= value; "" when Lines describe the GPUs.
	AutoDetect string
	// Lines are the GPUs' lines, by index.
	Lines []Line
	// Notes say what the lines leave out and why (comments in the file).
	Notes []string
}

// Text renders c as the lines of the file, each ending in a newline.
func (c *Conf) Text() string {
	var b strings.Builder
	for _, n := range c.Notes {
		b.WriteString("# " + n + "\n")
	}
	if c.AutoDetect != "" {
		b.WriteString("AutoDetect=" + c.AutoDetect + "\n")
	}
	for _, l := range c.Lines {
		if l.Comment != "" {
			b.WriteString("# " + l.Comment + "\n")
		}
		b.WriteString(l.String() + "\n")
	}
	return b.String()
}

// Render computes node n's gres.conf on a host with facts f. It returns
// nil when n asks for none.
func Render(n *spec.Node, f *facts.Node) (*Conf, error) {
	if !Wanted(n) {
		return nil, nil
	}
	if n.Slurm.GRESAutodetect.Set {
		return &Conf{AutoDetect: string(n.Slurm.GRESAutodetect.V)}, nil
	}
	hw := n.Hardware
	if hw == nil || hw.GPUCount == 0 {
		return nil, fmt.Errorf("gres = true needs the node's hardware description with its GPUs")
	}
	typ := spec.GRESTypeOf(hw.GPUModel)
	if n.Slurm.GRESType.Set {
		typ = n.Slurm.GRESType.V
	}
	if typ == "" {
		return nil, fmt.Errorf("hardware.gpu_model %q gives no GRES type; set slurm { gres_type }", hw.GPUModel)
	}
	b, err := bind.Compute(n, bind.FactsCPULists(f))
	if err != nil {
		return nil, err
	}
	numa := map[int]bind.GPU{}
	if b != nil {
		for _, g := range b.GPUs {
			numa[g.Index] = g
		}
	}
	c := &Conf{}
	var cores map[int]string
	if b != nil {
		if cores, err = SlurmCores(f.NUMA, hw.CPUCores); err != nil {
			return nil, err
		}
		if len(cores) == 1 {
			// One NUMA node with CPUs: every GPU is as close to every
			// core, and Slurm's docs advise leaving Cores out then.
			c.Notes = append(c.Notes, "Cores left out: the host's CPUs are all on one NUMA node.")
			cores = nil
		}
	}
	links, note := Links(hw)
	if note != "" {
		c.Notes = append(c.Notes, note)
	}
	pci := map[int]string{}
	for _, g := range hw.GPUs {
		pci[g.Index] = g.PCI
	}
	for i := range hw.GPUCount {
		// The driver names /dev/nvidiaN by device minor, which follows the
		// PCI bus order that NVML's indexes follow on every system whose
		// driver enumerates GPUs itself.
		l := Line{GPU: i, Fields: []string{"Type=" + typ, "File=/dev/nvidia" + strconv.Itoa(i)}}
		comment := "GPU " + strconv.Itoa(i)
		if pci[i] != "" {
			comment += " (" + pci[i] + ")"
		}
		if g, ok := numa[i]; ok && g.NUMA != bind.Unbound {
			comment += fmt.Sprintf(": NUMA node %d, CPUs %s", g.NUMA, g.CPUs)
			if cc, ok := cores[g.NUMA]; ok {
				l.Fields = append(l.Fields, "Cores="+cc)
			}
		} else {
			comment += ": bound to no NUMA node"
		}
		if links != nil {
			l.Fields = append(l.Fields, "Links="+links[i])
		}
		l.Comment = comment
		c.Lines = append(c.Lines, l)
	}
	return c, nil
}

// SlurmCores maps each NUMA node that has CPUs to the Slurm core indexes of
// its CPUs. gres.conf's Cores= takes Slurm's logical core indexes, not
// Linux CPU numbers (gres.conf(5): "Core 0 will be the first core on the
// first socket"): with hyperthreads the CPU numbers run past the core
// count and slurmctld rejects the whole list ("invalid GRES core
// specification"), leaving the GPUs without CPU affinity. Slurm numbers
// cores socket by socket in the order of their first CPU, and a core's
// threads share a NUMA node, so a node holding k CPUs owns k/threads
// consecutive indexes after those of the nodes whose first CPU comes
// before its own. cpuCores is hardware.cpu_cores (0 when not given); the
// threads per core come from it, or else from the layout Linux gives x86
// hyperthreads (the second half of the CPU numbers are the siblings of
// the first half, within every NUMA node).
func SlurmCores(nodes []facts.NUMANode, cpuCores int) (map[int]string, error) {
	type node struct {
		id   int
		cpus []int
	}
	var withCPUs []node
	var all []int
	for _, n := range nodes {
		if strings.TrimSpace(n.CPUs) == "" {
			continue // memory only (GH200's HBM, CXL)
		}
		cpus, err := cpulist.Parse(n.CPUs)
		if err != nil {
			return nil, fmt.Errorf("NUMA node %d: cpulist %q: %w", n.ID, n.CPUs, err)
		}
		if len(cpus) == 0 {
			continue
		}
		slices.Sort(cpus)
		withCPUs = append(withCPUs, node{n.ID, cpus})
		all = append(all, cpus...)
	}
	if len(withCPUs) == 0 {
		return nil, fmt.Errorf("the host reports no NUMA node with CPUs")
	}
	slices.Sort(all)
	threads := 1
	switch {
	case cpuCores > 0:
		if len(all)%cpuCores != 0 {
			return nil, fmt.Errorf("hardware.cpu_cores is %d but the host has %d CPUs online, not a whole number of threads per core", cpuCores, len(all))
		}
		threads = len(all) / cpuCores
	case len(withCPUs) > 1 && slices.IndexFunc(withCPUs, func(n node) bool { return !siblingHalves(all, n.cpus) }) < 0:
		threads = 2
	}
	slices.SortFunc(withCPUs, func(a, b node) int { return a.cpus[0] - b.cpus[0] })
	out := map[int]string{}
	next := 0
	for _, n := range withCPUs {
		if len(n.cpus)%threads != 0 {
			return nil, fmt.Errorf("NUMA node %d has %d CPUs, not a whole number of %d-thread cores", n.id, len(n.cpus), threads)
		}
		k := len(n.cpus) / threads
		out[n.id] = span(next, k)
		next += k
	}
	return out, nil
}

// siblingHalves reports whether node's CPUs pair up as x86 Linux numbers
// hyperthreads: the i-th CPU of the host and the (i+len/2)-th both in it
// or both not.
func siblingHalves(all, node []int) bool {
	if len(all)%2 != 0 {
		return false
	}
	half := len(all) / 2
	in := map[int]bool{}
	for _, c := range node {
		in[c] = true
	}
	for i := range half {
		if in[all[i]] != in[all[i+half]] {
			return false
		}
	}
	return true
}

// span is the cpulist of n indexes from first: "8-15", or "8" alone.
func span(first, n int) string {
	if n == 1 {
		return strconv.Itoa(first)
	}
	return strconv.Itoa(first) + "-" + strconv.Itoa(first+n-1)
}

// Links returns each GPU's Links= value from the hardware description's
// NVLink topology: -1 for the GPU itself, 1 for each GPU it reaches over
// NVLink, 0 for the others. Slurm compares the numbers with each other
// only, to give a job GPUs that are better connected, so an NVSwitch
// system's all-to-all fabric is 1 between every pair of its NVLink domain.
// It returns nil, with a note for the file, when the description does not
// say which GPUs are linked (NVLink bridges pair GPUs the profiles do not
// name) or no GPU is linked to another.
func Links(hw *spec.Hardware) (map[int]string, string) {
	switch {
	case hw.Interconnect == "nvswitch" && hw.NVLinkDomain > 1:
	case hw.Interconnect == "nvlink_bridge":
		return nil, "Links left out: the hardware description does not say which GPUs share an NVLink bridge."
	default:
		return nil, ""
	}
	dom := min(hw.NVLinkDomain, hw.GPUCount)
	out := map[int]string{}
	for i := range hw.GPUCount {
		v := make([]string, hw.GPUCount)
		for j := range v {
			switch {
			case i == j:
				v[j] = "-1"
			case i/dom == j/dom:
				v[j] = "1"
			default:
				v[j] = "0"
			}
		}
		out[i] = strings.Join(v, ",")
	}
	return out, ""
}

// Detected is one GRES slurmd reports with `slurmd -G`, the configuration
// it would register: what AutoDetect found, checked against any lines.
type Detected struct {
	// Name is the GRES name ("gpu").
	Name string
	// Type is its type ("nvidia_h100_80gb_hbm3").
	Type string
	// File is the device file ("/dev/nvidia0").
	File string
	// Cores are the Slurm core indexes slurmd ties to it; "" when none.
	Cores string
	// Links is its Links= value; "" when none.
	Links string
}

// ParseSlurmdG reads `slurmd -G` output: one "slurmd: Gres Name=gpu
// Type=… Count=1 Index=0 ID=… File=/dev/nvidia0 Cores=0-55 CoreCnt=224
// Links=-1,0 Flags=…" line per GRES (Slurm 20.11 and later print this
// shape); every other line (plugin messages, errors) is left out, and
// returned as the lines slurmd said were errors.
func ParseSlurmdG(out string) (gres []Detected, errs []string) {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		rest := strings.TrimPrefix(line, "slurmd: ")
		if e, ok := strings.CutPrefix(rest, "error: "); ok {
			errs = append(errs, e)
			continue
		}
		rest, ok := strings.CutPrefix(rest, "Gres ")
		if !ok {
			continue
		}
		var d Detected
		for _, f := range strings.Fields(rest) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "Name":
				d.Name = v
			case "Type":
				d.Type = v
			case "File":
				d.File = v
			case "Cores":
				d.Cores = v
			case "Links":
				d.Links = v
			}
		}
		if d.Name != "" {
			gres = append(gres, d)
		}
	}
	return gres, errs
}
