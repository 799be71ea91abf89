package sim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A profile's hardware faults are written once, in its @faults section,
// and every layer of the node is derived from that one description: the
// sysfs attributes the facts probe and graph read, the faults planted in
// the node's simulated NVML (NVMLFaultsFile), what its nvidia-smi prints
// (NvidiaSMIDir, written from that NVML), and the bench replays of the
// devices a fault slows. So a fault cannot show on one layer and be absent
// from another; TestProfileLayersAgree checks what is left hand-written
// (the kernel log).
//
//	gpu 0000:c3:00.0 width=8                  trained at x8 of x16
//	gpu 0000:61:00.0 idle                     idle: link at Gen1 to save power (not a fault)
//	gpu 0000:9d:00.0 off_bus xid=79           fell off the bus; NVML no longer enumerates it
//	gpu 0000:9d:00.0 nvlink_down              NVLink link 0 down: NV17 to every peer in topo -m
//	gpu 0000:9d:00.0 remap_pending            a row remap waits for a GPU reset (NVML's remapped rows)
//	gpu 0000:9d:00.0 thermal_slowdown         clocks held down by a hardware thermal slowdown (NVML's throttle reasons)
//	gpu 0008:06:00.0 fabric_not_started       NVLink fabric registration Not Started (a tray the switch trays did not train)
//	nic mlx5_3 rate="200 Gb/sec (4X HDR)"     port up at a lower rate
//	nic mlx5_5 state="1: DOWN" phys_state="2: Polling"   rail down
//	kernel dmesg=restricted                   dmesg refused (kernel.dmesg_restrict)
//	kernel dmesg=flood                        the log's Xid lines repeated past 64 MiB
//	workload checkpoint=lost                  the training stand-in never writes its checkpoint
//	workload resume=from_zero                 its resume ignores the checkpoint, starts at step 0
//	workload resumed_throughput=half          its resumed run goes at half the speed

// FaultsSection is the archive section holding a profile's fault
// description.
const FaultsSection = "@faults"

// DeviceFault is one line of a profile's fault description.
type DeviceFault struct {
	// Kind is "gpu", "nic", "kernel" or "workload".
	Kind string
	// Device is the GPU's PCI address ("0000:c3:00.0") or the NIC's RDMA
	// device name ("mlx5_3").
	Device string
	// Width, for a GPU, is the lane count its link trained at (0: its
	// maximum).
	Width int
	// Idle says a GPU is idle, its link down to Gen1 to save power: not a
	// fault, and nothing may fail on it.
	Idle bool
	// OffBus says a GPU fell off the bus: NVML no longer enumerates it,
	// while sysfs still lists it as a lost device's does until removed.
	OffBus bool
	// XID is the Xid the driver logged for the GPU (0: none).
	XID int
	// NVLinkDown says one NVLink link of the GPU is down (link 0, as the
	// simulated NVML models it): NVML shows the link inactive, and
	// nvidia-smi topo -m one bonded link fewer to every peer.
	NVLinkDown bool
	// RemapPending says a row remap of the GPU's memory waits for a GPU
	// reset: NVML's remapped rows report it pending.
	RemapPending bool
	// ThermalSlowdown says the GPU's clocks are held down by a hardware
	// thermal slowdown: NVML's throttle reasons report it.
	ThermalSlowdown bool
	// FabricNotStarted says the GPU's NVLink fabric registration is Not
	// Started (rack-scale trays): NVML, nvidia-smi -q and -q -x show it.
	FabricNotStarted bool
	// Port holds a NIC port's sysfs attributes that differ from the
	// hardware layer (rate, state, phys_state, link_layer), as sysfs
	// prints them.
	Port map[string]string
	// Dmesg, for the kernel log ("kernel" lines, no device), is how
	// dmesg fails: "restricted" (refused to the user, as under
	// kernel.dmesg_restrict) or "flood" (the log's lines printed over and
	// over, more than gpuform reads of a command's output).
	Dmesg string
	// Workload, for the training stand-in ("workload" lines, no device),
	// are its faults as "key=value" words (WorkloadFaults lists them).
	Workload []string
}

// Fault reports whether the line describes something wrong with the
// device (an idle GPU is described but not at fault).
func (f DeviceFault) Fault() bool {
	return !(f.Kind == "gpu" && f.Idle && f.Width == 0 && !f.OffBus && f.XID == 0 && !f.NVLinkDown && !f.RemapPending && !f.ThermalSlowdown && !f.FabricNotStarted)
}

// ParseFaults reads a fault description, one device per line.
func ParseFaults(data []byte) ([]DeviceFault, error) {
	var out []DeviceFault
	err := eachLine(data, func(line string) error {
		kind, rest, _ := strings.Cut(line, " ")
		f := DeviceFault{Kind: kind}
		switch kind {
		case "gpu":
			words := strings.Fields(rest)
			if len(words) == 0 {
				return errors.New("want gpu ADDRESS …")
			}
			bus, err := normalizeBus(words[0])
			if err != nil {
				return err
			}
			f.Device = bus
			for _, w := range words[1:] {
				k, v, kv := strings.Cut(w, "=")
				switch {
				case w == "idle":
					f.Idle = true
				case w == "off_bus":
					f.OffBus = true
				case w == "nvlink_down":
					f.NVLinkDown = true
				case w == "remap_pending":
					f.RemapPending = true
				case w == "thermal_slowdown":
					f.ThermalSlowdown = true
				case w == "fabric_not_started":
					f.FabricNotStarted = true
				case kv && (k == "width" || k == "xid"):
					n, err := strconv.Atoi(v)
					if err != nil || n <= 0 {
						return fmt.Errorf("%s=%q: want a positive number", k, v)
					}
					if k == "xid" {
						f.XID = n
					} else if n != 8 {
						// The simulated NVML models one trained-down width.
						return fmt.Errorf("width=%d: the simulated NVML models x8 only", n)
					} else {
						f.Width = n
					}
				default:
					return fmt.Errorf("unknown GPU fault %q (want width=8, idle, off_bus, nvlink_down, remap_pending, thermal_slowdown, fabric_not_started, xid=N)", w)
				}
			}
		case "nic":
			dev, attrs, err := fields(rest)
			if err != nil {
				return err
			}
			if !validName(dev) {
				return fmt.Errorf("bad RDMA device %q", dev)
			}
			f.Device = dev
			for k := range attrs {
				switch k {
				case "rate", "state", "phys_state", "link_layer":
				default:
					return fmt.Errorf("unknown NIC port attribute %q", k)
				}
			}
			if len(attrs) == 0 {
				return errors.New("a NIC fault needs rate=, state=, phys_state= or link_layer=")
			}
			f.Port = attrs
		case "kernel":
			head, attrs, err := fields(rest)
			if err != nil {
				return err
			}
			if head != "" || len(attrs) != 1 || (attrs["dmesg"] != DmesgRestricted && attrs["dmesg"] != DmesgFlood) {
				return fmt.Errorf("want kernel dmesg=%s or dmesg=%s", DmesgRestricted, DmesgFlood)
			}
			f.Dmesg = attrs["dmesg"]
		case "workload":
			for _, w := range strings.Fields(rest) {
				if !slices.Contains(WorkloadFaults(), w) {
					return fmt.Errorf("unknown workload fault %q (want %s)", w, strings.Join(WorkloadFaults(), ", "))
				}
				f.Workload = append(f.Workload, w)
			}
			if len(f.Workload) == 0 {
				return fmt.Errorf("want workload %s", strings.Join(WorkloadFaults(), " or "))
			}
		default:
			return fmt.Errorf("unknown device kind %q (want gpu, nic, kernel or workload)", kind)
		}
		out = append(out, f)
		return nil
	})
	return out, err
}

// normalizeBus lower-cases a PCI address and checks its shape
// (DDDD:BB:DD.F).
func normalizeBus(s string) (string, error) {
	a := strings.ToLower(s)
	if len(a) != 12 || a[4] != ':' || a[7] != ':' || a[10] != '.' {
		return "", fmt.Errorf("bad PCI address %q (want DDDD:BB:DD.F)", s)
	}
	return a, nil
}

// Faults returns the fault description of a profile, its @base
// profiles' first.
func Faults(name string) ([]DeviceFault, error) {
	if !validName(name) {
		return nil, fmt.Errorf("bad simulated profile name %q", name)
	}
	var out []DeviceFault
	err := walkArchives("roots/"+name+".txtar", 0, func(section string, data []byte) error {
		if section != FaultsSection {
			return nil
		}
		fs, err := ParseFaults(data)
		out = append(out, fs...)
		return err
	})
	return out, err
}

// PlantFaults applies a fault description no shipped profile carries to
// a root Materialize made, as if its profile's @faults held the lines too
// (the CLI tests' kernel-log failures), every layer derived from them as
// from a profile's own, nvidia-smi's answers included. Lines that rewrite
// what a profile already derived (its NVML faults) replace it; plant them
// on a profile without such faults.
func PlantFaults(root string, description []byte) error {
	marker, err := os.ReadFile(filepath.Join(root, MarkerFile))
	if err != nil {
		return fmt.Errorf("%s is not a simulated root: %w", root, err)
	}
	faults, err := ParseFaults(description)
	if err != nil {
		return err
	}
	if err := applyFaults(root, faults); err != nil {
		return err
	}
	_, profile, _ := strings.Cut(strings.TrimSpace(string(marker)), "\nprofile ")
	return writeNvidiaSMI(root, profile)
}

// walkArchives calls fn for each special section of an archive and its
// @base layers, bases first.
func walkArchives(name string, depth int, fn func(section string, data []byte) error) error {
	if depth > 4 {
		return fmt.Errorf("%s: @base nesting too deep", name)
	}
	a, err := load(name)
	if err != nil {
		return err
	}
	for _, f := range a.Files {
		if f.Name == "@base" {
			if err := walkArchives(layerPath(strings.TrimSpace(string(f.Data))), depth+1, fn); err != nil {
				return err
			}
		}
	}
	for _, f := range a.Files {
		if strings.HasPrefix(f.Name, "@") && f.Name != "@base" {
			if err := fn(f.Name, f.Data); err != nil {
				return fmt.Errorf("%s %s: %w", name, f.Name, err)
			}
		}
	}
	return nil
}

// layerPath is the archive a @base line names: a hardware layer, else
// another profile.
func layerPath(base string) string {
	layer := "roots/hw/" + base + ".txtar"
	if _, err := roots.Open(layer); err != nil {
		layer = "roots/" + base + ".txtar"
	}
	return layer
}

// applyFaults derives every layer from the fault description, once the
// profile's files, sysfs and bench captures are in place.
func applyFaults(dir string, faults []DeviceFault) error {
	var nvml []string
	for _, f := range faults {
		var err error
		switch f.Kind {
		case "gpu":
			var lines []string
			lines, err = applyGPUFault(dir, f)
			nvml = append(nvml, lines...)
		case "nic":
			err = applyNICFault(dir, f)
		case "kernel":
			err = applyKernelFault(dir, f)
		case "workload":
			err = appendLines(filepath.Join(dir, filepath.FromSlash(WorkloadFaultsFile)), f.Workload)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", f.Kind, f.Device, err)
		}
	}
	if len(nvml) == 0 {
		return nil
	}
	return writeFile(filepath.Join(dir, filepath.FromSlash(NVMLFaultsFile)), []byte(strings.Join(nvml, "\n")+"\n"))
}

// applyGPUFault writes a GPU's link into sysfs and scales its host copies
// in the nvbandwidth replays; it returns the faults for its simulated
// NVML, naming the GPU by address.
func applyGPUFault(dir string, f DeviceFault) ([]string, error) {
	bus, _ := normalizeBus(f.Device)
	dev := filepath.Join(dir, "sys", "bus", "pci", "devices", bus)
	if _, err := os.Stat(filepath.Join(dev, "vendor")); err != nil {
		return nil, fmt.Errorf("no PCI function %s in the hardware layer", bus)
	}
	var nvml []string
	if f.Width > 0 {
		if err := writeFile(filepath.Join(dev, "current_link_width"), []byte(strconv.Itoa(f.Width)+"\n")); err != nil {
			return nil, err
		}
		maxW, err := readInt(filepath.Join(dev, "max_link_width"))
		if err != nil {
			return nil, err
		}
		if err := scaleHostCopies(dir, bus, float64(f.Width)/float64(maxW)); err != nil {
			return nil, err
		}
		nvml = append(nvml, "pcie_x8@"+bus)
	}
	if f.Idle {
		// What sysfs shows for a link an idle GPU has dropped to Gen1;
		// under load (bench's copies) it trains back up, so the replays
		// keep their full numbers.
		if err := writeFile(filepath.Join(dev, "current_link_speed"), []byte("2.5 GT/s PCIe\n")); err != nil {
			return nil, err
		}
		nvml = append(nvml, "pcie_idle@"+bus)
	}
	if f.OffBus {
		nvml = append(nvml, "drop_gpu@"+bus)
	}
	if f.NVLinkDown {
		// The bench replays keep their numbers: one link of 18 (or 12)
		// is within the spread of peer copies (modelled, not captured).
		nvml = append(nvml, "nvlink_down@"+bus)
	}
	// Neither shows in sysfs or the bench replays: a pending remap and a
	// thermal slowdown are NVML's (and so nvidia-smi's) to report.
	if f.RemapPending {
		nvml = append(nvml, "remap_pending@"+bus)
	}
	if f.ThermalSlowdown {
		nvml = append(nvml, "thermal_slowdown@"+bus)
	}
	if f.FabricNotStarted {
		nvml = append(nvml, "fabric_not_started@"+bus)
	}
	return nvml, nil
}

// applyNICFault writes a NIC port's attributes into sysfs and, for a port
// up at a lower rate, the RDMA write replay of that device.
func applyNICFault(dir string, f DeviceFault) error {
	line := f.Device + " port=1"
	for _, k := range []string{"link_layer", "rate", "state", "phys_state"} {
		if v, ok := f.Port[k]; ok {
			line += fmt.Sprintf(" %s=%q", k, v)
		}
	}
	if err := addIBPort(dir, line); err != nil {
		return err
	}
	rate, ok := f.Port["rate"]
	if !ok {
		return nil
	}
	gbps, err := rateGbps(rate)
	if err != nil {
		return err
	}
	return scaleRDMAWrites(dir, f.Device, gbps)
}

// WorkloadFaults are the faults a "workload" line gives the training
// stand-in (standins/gpuform-sim-train), for the checkpoint-restore
// drill: its checkpoint never written, its resume starting from step 0,
// its resumed run at half the speed.
func WorkloadFaults() []string {
	return []string{"checkpoint=lost", "resume=from_zero", "resumed_throughput=half"}
}

// WorkloadFaultsFile, in a root, lists the training stand-in's faults,
// one a line.
const WorkloadFaultsFile = "var/lib/gpuform-sim/workload-faults"

// appendLines appends lines to the file at p, made when missing.
func appendLines(p string, lines []string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// The ways a "kernel" fault line makes dmesg fail.
const (
	DmesgRestricted = "restricted"
	DmesgFlood      = "flood"
)

// DmesgFloodFile, in a root, makes the dmesg stand-in print the kernel log
// over and over, more than a command may write (an Xid storm on a node
// whose log buffer was made huge, or a hostile one).
const DmesgFloodFile = "var/lib/gpuform-sim/kmsg-flood"

// dmesgRestricted is what util-linux's dmesg prints when the kernel
// refuses an unprivileged reader its buffer (kernel.dmesg_restrict=1).
const dmesgRestricted = "dmesg: read kernel buffer failed: Operation not permitted\n"

// applyKernelFault makes the dmesg stand-in fail as described: refused
// (its failure file, as a tool's fail/NAME file makes any stand-in fail),
// or flooding, which needs a kernel log with an Xid line to repeat: only
// Xid lines cross the wire, so only they can pass the output limit.
func applyKernelFault(dir string, f DeviceFault) error {
	switch f.Dmesg {
	case DmesgRestricted:
		return writeFile(filepath.Join(dir, "var", "lib", "gpuform-sim", "fail", "dmesg"), []byte(dmesgRestricted))
	case DmesgFlood:
		b, err := os.ReadFile(filepath.Join(dir, "var", "lib", "gpuform-sim", "kmsg"))
		if err != nil || !strings.Contains(string(b), "NVRM: Xid") {
			return errors.New("dmesg=flood repeats the profile's kernel log, which has no Xid line")
		}
		return writeFile(filepath.Join(dir, filepath.FromSlash(DmesgFloodFile)), []byte("65\n"))
	}
	return fmt.Errorf("unknown dmesg fault %q", f.Dmesg)
}

// captureRateGbps is the link rate of the ib_write_bw capture every
// profile replays (ConnectX-7 at 4X NDR; ../bench/README.md).
const captureRateGbps = 400

// rateGbps reads sysfs's "200 Gb/sec (4X HDR)".
func rateGbps(rate string) (float64, error) {
	n, _, ok := strings.Cut(rate, " Gb/sec")
	v, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
	if !ok || err != nil || v <= 0 {
		return 0, fmt.Errorf("rate %q: want sysfs's \"N Gb/sec (…)\"", rate)
	}
	return v, nil
}

func readInt(p string) (int, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s: %q is not a positive number", p, strings.TrimSpace(string(b)))
	}
	return n, nil
}

// cudaIndex is the GPU's CUDA device number on the node: NVIDIA display
// and 3D controllers in PCI address order, as CUDA numbers identical GPUs.
func cudaIndex(dir, bus string) (int, error) {
	devs, err := os.ReadDir(filepath.Join(dir, "sys", "bus", "pci", "devices"))
	if err != nil {
		return 0, err
	}
	var gpus []string
	for _, d := range devs {
		p := filepath.Join(dir, "sys", "bus", "pci", "devices", d.Name())
		v, _ := os.ReadFile(filepath.Join(p, "vendor"))
		c, _ := os.ReadFile(filepath.Join(p, "class"))
		if strings.TrimSpace(string(v)) == "0x10de" && strings.HasPrefix(strings.TrimSpace(string(c)), "0x03") {
			gpus = append(gpus, d.Name())
		}
	}
	sort.Strings(gpus)
	for i, g := range gpus {
		if g == bus {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s is not an NVIDIA GPU", bus)
}

// scaleHostCopies multiplies GPU bus's column of the captured host↔device
// nvbandwidth matrices by factor (a link at x8 of x16 moves half as much)
// and recomputes their SUM line. A root without nvbandwidth captures has
// nothing to scale.
func scaleHostCopies(dir, bus string, factor float64) error {
	nvb := filepath.Join(dir, filepath.FromSlash(BenchDir), "nvbandwidth")
	files, err := os.ReadDir(nvb)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	col, err := cudaIndex(dir, bus)
	if err != nil {
		return err
	}
	for _, f := range files {
		if !strings.HasPrefix(f.Name(), "host_to_device_") && !strings.HasPrefix(f.Name(), "device_to_host_") {
			continue
		}
		p := filepath.Join(nvb, f.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out, err := scaleHostCopyColumn(string(b), col, factor)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name(), err)
		}
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// scaleHostCopyColumn rewrites an nvbandwidth host↔device run (one matrix
// row "0" of one value per GPU) with GPU col's value multiplied by factor,
// values printed as nvbandwidth prints them (%10.2f after the row label)
// and SUM recomputed from the printed values. Everything else is kept.
func scaleHostCopyColumn(text string, col int, factor float64) (string, error) {
	lines := strings.Split(text, "\n")
	row, sum := -1, -1
	for i, l := range lines {
		f := strings.Fields(l)
		switch {
		case row < 0 && len(f) > col+1 && f[0] == "0" && i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), "0 "):
			row = i
		case len(f) == 3 && f[0] == "SUM":
			sum = i
		}
	}
	if row < 0 || sum < 0 {
		return "", errors.New("no host copy matrix row and SUM line")
	}
	vals := strings.Fields(lines[row])[1:]
	var b strings.Builder
	b.WriteString(" 0")
	total := 0.0
	for i, v := range vals {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return "", fmt.Errorf("matrix value %q", v)
		}
		if i == col {
			x *= factor
		}
		s := fmt.Sprintf("%10.2f", x)
		y, _ := strconv.ParseFloat(strings.TrimSpace(s), 64)
		total += y
		b.WriteString(s)
	}
	lines[row] = b.String()
	f := strings.Fields(lines[sum])
	lines[sum] = fmt.Sprintf("SUM %s %.2f", f[1], total)
	return strings.Join(lines, "\n"), nil
}

// scaleRDMAWrites writes the device's own ib_write_bw replay
// (report-DEV.txt, which the stand-in prefers for a pair that includes
// DEV): the node's captured report with its bandwidth and message rate
// scaled to the port's rate. A root without ib_write_bw captures has
// nothing to scale.
func scaleRDMAWrites(dir, dev string, gbps float64) error {
	d := filepath.Join(dir, filepath.FromSlash(BenchDir), "ib_write_bw")
	b, err := os.ReadFile(filepath.Join(d, "report.txt"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	out, err := scaleRDMAReport(string(b), gbps/captureRateGbps)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, "report-"+dev+".txt"), []byte(out), 0o644)
}

// scaleRDMAReport multiplies the result line of a perftest report (#bytes,
// #iterations, BW peak, BW average, MsgRate) by factor, keeping its
// spacing: peak and average printed %.2f, the message rate %.6f, as
// perftest prints them.
func scaleRDMAReport(text string, factor float64) (string, error) {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) != 5 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if _, err := strconv.Atoi(f[0]); err != nil {
			continue
		}
		var nums [3]float64
		ok := true
		for k := range nums {
			v, err := strconv.ParseFloat(f[2+k], 64)
			if err != nil {
				ok = false
			}
			nums[k] = v * factor
		}
		if !ok {
			continue
		}
		repl := []string{fmt.Sprintf("%.2f", nums[0]), fmt.Sprintf("%.2f", nums[1]), fmt.Sprintf("%.6f", nums[2])}
		// Replace the three numbers in place, left to right, so tabs and
		// padding stay as captured.
		pos := 0
		for k, old := range f {
			j := strings.Index(l[pos:], old) + pos
			if k >= 2 {
				l = l[:j] + repl[k-2] + l[j+len(old):]
				old = repl[k-2]
			}
			pos = j + len(old)
		}
		lines[i] = l
		return strings.Join(lines, "\n"), nil
	}
	return "", errors.New("no perftest result line")
}
