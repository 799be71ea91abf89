package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// A simulated node answers `nvidia-smi -q -x` and `nvidia-smi topo -m`
// from the same data and the same fault description as its simulated
// NVML: when a root is materialised, the NVML mock of its profile, with
// the faults the description planted (NVMLFaultsFile), is read once and
// written out as nvidia-smi would print it; the `nvidia-smi` stand-in
// prints those files with the driver the root has loaded at the time. So
// a GPU trained at x8 shows x8 on both paths, a GPU that fell off the bus
// is absent from both, and an idle link shows Gen1 of Gen5 on both.
//
// The XML follows real captures element for element where it has a value
// (provision/verify/smi/testdata/nvidia-smi-q-x-A100-sxm4-80gb-mig-driver535-one-of-4.xml,
// the v12 DTD of drivers 535 and later: pci/pci_gpu_link_info/pcie_gen,
// link_widths "16x", clocks_event_reasons, gpu_power_readings, remapped_rows
// as in ...-A10G-driver515-v11.xml); elements a real node prints that
// nothing here models (clocks, fan, memory usage, inforom, vbios) are left
// out rather than invented. The matrix follows the real captures under
// provision/verify/smi/testdata/topo/ (tab-separated cells, " X " on the
// diagonal, CPU Affinity / NUMA Affinity / GPU NUMA ID columns, the NIC
// Legend of drivers 535 and later; topo-m-8gpu-nv18-12nic-tpgds-aihub0007.txt).

// NvidiaSMIDir, in a root, holds what the nvidia-smi stand-in prints:
// q-x.xml for `-q -x`, topo-m.txt for `topo -m`.
const NvidiaSMIDir = "var/lib/gpuform-sim/nvidia-smi"

// NoNVMLAgentFile, in a root, says the node cannot run gpuform's NVML
// agent (a node of another CPU architecture, a glibc too old for it): its
// content is the reason. verify then reads the node through nvidia-smi,
// the fallback a real node of that kind gets.
const NoNVMLAgentFile = "var/lib/gpuform-sim/no-nvml-agent"

// Placeholders the stand-in fills at run time: the driver the root has
// loaded then (apply and reboot change it) and the time of the call.
const (
	smiDriverPlaceholder = "@DRIVER_VERSION@"
	smiTimePlaceholder   = "@TIMESTAMP@"
)

// mockSystem is the go-nvml mock system a profile's hardware follows.
func mockSystem(profile string) (string, bool) {
	switch {
	case strings.HasPrefix(profile, "hgx-h100"), profile == "no-driver":
		// no-driver is the HGX H100 hardware with no NVIDIA software; once
		// apply installs a driver and it reboots, it answers like the others.
		return nvmlfacts.MockDGXH100, true
	case strings.HasPrefix(profile, "dgx-a100"):
		return nvmlfacts.MockDGXA100, true
	case strings.HasPrefix(profile, "l40s"):
		return nvmlfacts.MockL40SPCIe, true
	case strings.HasPrefix(profile, "gh200"):
		return nvmlfacts.MockGH200, true
	case strings.HasPrefix(profile, "gb200-nvl72-tray"):
		return nvmlfacts.MockGB200Tray, true
	case strings.HasPrefix(profile, "gb300-nvl72-tray"):
		return nvmlfacts.MockGB300Tray, true
	}
	return "", false
}

// writeNvidiaSMI reads the profile's simulated NVML, faults planted, and
// writes what nvidia-smi prints of it. A build without cgo has no NVML
// mock; its nodes' nvidia-smi then says so when run.
func writeNvidiaSMI(dir, profile string) error {
	system, ok := mockSystem(profile)
	if !ok {
		return nil
	}
	var faults []nvmlfacts.Fault
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(NVMLFaultsFile)))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, s := range strings.Fields(string(b)) {
		f, err := nvmlfacts.ParseFault(s)
		if err != nil {
			return err
		}
		faults = append(faults, f)
	}
	// Every RDMA device of the node, as nvidia-smi's NIC columns list
	// them.
	nics, err := nvmlfacts.DiscoverNICs(dir)
	if err != nil {
		return err
	}
	sortNICs(nics)
	// GPU–NIC levels as the node's NVML answers them (its layout), and
	// from the node's PCI tree for the NICs that layout leaves out (the
	// storage ports).
	collect := func(topo nvmlfacts.PCITopology) (*nvmlfacts.Report, error) {
		return nvmlfacts.CollectAgent(context.Background(), nvmlfacts.AgentOptions{
			Mock: system, Faults: faults, Collect: nvmlfacts.Options{NICs: nics, Topology: topo},
		})
	}
	rep, err := collect(nil)
	if errors.Is(err, nvmlfacts.ErrNoCgo) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("simulated NVML for nvidia-smi: %w", err)
	}
	bySysfs, err := collect(nvmlfacts.SysfsTopology{Root: dir})
	if err != nil {
		return fmt.Errorf("simulated NVML for nvidia-smi: %w", err)
	}
	type pair struct {
		gpu int
		nic string
	}
	have := map[pair]bool{}
	for _, p := range rep.NICTopology {
		have[pair{p.GPU, p.NIC}] = true
	}
	for _, p := range bySysfs.NICTopology {
		if !have[pair{p.GPU, p.NIC}] {
			rep.NICTopology = append(rep.NICTopology, p)
		}
	}
	out := filepath.Join(dir, filepath.FromSlash(NvidiaSMIDir))
	if err := writeFile(filepath.Join(out, "q-x.xml"), renderSMIQuery(rep)); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(out, "q.txt"), renderSMIQueryText(rep)); err != nil {
		return err
	}
	sys := nvmlfacts.SysfsTopology{Root: dir}
	nicLevel := func(a, b string) string {
		l, err := sys.CommonAncestor(a, b)
		if err != nil {
			// Every NIC listed came from this tree; one it could not
			// place anyway prints SYS (verify reads no NIC row).
			return "SYS"
		}
		return string(l)
	}
	return writeFile(filepath.Join(out, "topo-m.txt"), renderSMITopo(rep, nics, nicLevel))
}

// sortNICs orders RDMA devices as the NIC Legend of a real matrix does
// (mlx5_0, mlx5_1, …, mlx5_10): by name, numbers compared as numbers.
func sortNICs(nics []nvmlfacts.NIC) {
	key := func(s string) (string, int) {
		i := strings.LastIndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
		n, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return s, -1
		}
		return s[:i+1], n
	}
	sort.SliceStable(nics, func(i, j int) bool {
		pi, ni := key(nics[i].Name)
		pj, nj := key(nics[j].Name)
		if pi != pj {
			return pi < pj
		}
		return ni < nj
	})
}

// renderSMIQueryText writes the parts of `nvidia-smi -q` the simulated
// NVML models: the GPU headers and each GPU's "Fabric" section, laid out
// as the captures under provision/verify/smi/testdata/fabric/ print them
// (names padded to 34 columns, "N/A" where the GPU has no NVLink fabric).
// The rest of a real -q (clocks, memory, processes) is left out rather
// than invented.
func renderSMIQueryText(rep *nvmlfacts.Report) []byte {
	var b strings.Builder
	b.WriteString("\n==============NVSMI LOG==============\n\n")
	b.WriteString("Timestamp                                 : @TIMESTAMP@\n")
	b.WriteString("Driver Version                            : @DRIVER_VERSION@\n")
	fmt.Fprintf(&b, "\nAttached GPUs                             : %d\n", len(rep.GPUs))
	field := func(name, value string) { fmt.Fprintf(&b, "        %-34s: %s\n", name, value) }
	for _, g := range rep.GPUs {
		fmt.Fprintf(&b, "GPU %s\n", g.BusID)
		b.WriteString("    Fabric\n")
		if g.Fabric == nil {
			field("State", "N/A")
			field("Status", "N/A")
			field("CliqueId", "N/A")
			field("ClusterUUID", "N/A")
			continue
		}
		status := g.Fabric.Status
		if status == "" {
			status = "N/A"
		}
		field("State", g.Fabric.State)
		field("Status", status)
		field("CliqueId", strconv.FormatUint(uint64(g.Fabric.CliqueID), 10))
		field("ClusterUUID", g.Fabric.ClusterUUID)
	}
	return []byte(b.String())
}

// renderSMIQuery writes rep as `nvidia-smi -q -x` prints it.
func renderSMIQuery(rep *nvmlfacts.Report) []byte {
	var b strings.Builder
	el := func(depth int, name, value string) {
		fmt.Fprintf(&b, "%s<%s>%s</%s>\n", strings.Repeat("    ", depth), name, xmlText(value), name)
	}
	open := func(depth int, name string) { fmt.Fprintf(&b, "%s<%s>\n", strings.Repeat("    ", depth), name) }
	closeEl := func(depth int, name string) { fmt.Fprintf(&b, "%s</%s>\n", strings.Repeat("    ", depth), name) }
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
	b.WriteString("<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_v12.dtd\">\n")
	b.WriteString("<nvidia_smi_log>\n")
	el(1, "timestamp", smiTimePlaceholder)
	el(1, "driver_version", smiDriverPlaceholder)
	el(1, "cuda_version", orNA(rep.CUDADriverVersion))
	el(1, "attached_gpus", strconv.Itoa(len(rep.GPUs)))
	for _, g := range rep.GPUs {
		fmt.Fprintf(&b, "    <gpu id=%q>\n", g.BusID)
		el(2, "product_name", g.Name)
		el(2, "product_brand", "NVIDIA")
		el(2, "persistence_mode", enabledWord(g.PersistenceMode))
		open(2, "mig_mode")
		if g.MIG != nil {
			el(3, "current_mig", enabledWord(&g.MIG.Enabled))
			el(3, "pending_mig", enabledWord(&g.MIG.PendingEnabled))
		} else {
			el(3, "current_mig", "N/A")
			el(3, "pending_mig", "N/A")
		}
		closeEl(2, "mig_mode")
		el(2, "serial", orNA(g.Serial))
		el(2, "uuid", g.UUID)
		if g.MinorNumber != nil {
			el(2, "minor_number", strconv.Itoa(*g.MinorNumber))
		}
		open(2, "gpu_virtualization_mode")
		el(3, "virtualization_mode", orNA(g.Virtualization))
		el(3, "host_vgpu_mode", "N/A")
		closeEl(2, "gpu_virtualization_mode")
		writeSMIPCI(el, open, closeEl, g)
		if g.Throttle != nil {
			open(2, "clocks_event_reasons")
			active := map[string]bool{}
			for _, a := range g.Throttle.Active {
				active[a] = true
			}
			// The nine reasons in the capture's order.
			for _, r := range []string{nvmlfacts.ThrottleGPUIdle, nvmlfacts.ThrottleApplicationsClocks, nvmlfacts.ThrottleSWPowerCap,
				nvmlfacts.ThrottleHWSlowdown, nvmlfacts.ThrottleHWThermalSlowdown, nvmlfacts.ThrottleHWPowerBrakeSlowdown,
				nvmlfacts.ThrottleSyncBoost, nvmlfacts.ThrottleSWThermalSlowdown, nvmlfacts.ThrottleDisplayClocks} {
				v := "Not Active"
				if active[r] {
					v = "Active"
				}
				el(3, "clocks_event_reason_"+r, v)
			}
			closeEl(2, "clocks_event_reasons")
		}
		writeSMIECC(el, open, closeEl, g)
		if t := g.TemperatureC; t != nil {
			open(2, "temperature")
			el(3, "gpu_temp", fmt.Sprintf("%d C", *t))
			closeEl(2, "temperature")
		}
		open(2, "gpu_power_readings")
		limit := "N/A"
		if g.PowerLimitW != nil {
			limit = fmt.Sprintf("%.2f W", *g.PowerLimitW)
		}
		el(3, "current_power_limit", limit)
		closeEl(2, "gpu_power_readings")
		// Idle GPUs: the capture's empty process lists.
		b.WriteString("        <processes />\n        <accounted_processes />\n")
		b.WriteString("    </gpu>\n")
	}
	b.WriteString("</nvidia_smi_log>\n")
	return []byte(b.String())
}

type elFunc func(depth int, name, value string)
type tagFunc func(depth int, name string)

func writeSMIPCI(el elFunc, open, closeEl tagFunc, g nvmlfacts.GPU) {
	open(2, "pci")
	// "00000000:C3:00.0": domain, bus, device as the capture splits them.
	dom, rest, _ := strings.Cut(g.BusID, ":")
	bus, dev, _ := strings.Cut(rest, ":")
	dev, _, _ = strings.Cut(dev, ".")
	el(3, "pci_bus", bus)
	el(3, "pci_device", dev)
	// The capture prints the 8-digit domain as four digits ("0000").
	el(3, "pci_domain", dom[max(0, len(dom)-4):])
	el(3, "pci_device_id", orNA(strings.TrimPrefix(g.PCIDeviceID, "0x")))
	el(3, "pci_bus_id", g.BusID)
	if l := g.PCIe; l != nil {
		open(3, "pci_gpu_link_info")
		open(4, "pcie_gen")
		el(5, "max_link_gen", strconv.Itoa(l.MaxGen))
		el(5, "current_link_gen", strconv.Itoa(l.CurrentGen))
		el(5, "device_current_link_gen", strconv.Itoa(l.CurrentGen))
		dmax := l.GPUMaxGen
		if dmax == 0 {
			dmax = l.MaxGen
		}
		el(5, "max_device_link_gen", strconv.Itoa(dmax))
		el(5, "max_host_link_gen", strconv.Itoa(l.MaxGen))
		closeEl(4, "pcie_gen")
		open(4, "link_widths")
		el(5, "max_link_width", strconv.Itoa(l.MaxWidth)+"x")
		el(5, "current_link_width", strconv.Itoa(l.CurrentWidth)+"x")
		closeEl(4, "link_widths")
		closeEl(3, "pci_gpu_link_info")
	}
	closeEl(2, "pci")
}

func writeSMIECC(el elFunc, open, closeEl tagFunc, g nvmlfacts.GPU) {
	e := g.ECC
	open(2, "ecc_mode")
	if e != nil {
		el(3, "current_ecc", enabledWord(&e.Enabled))
		el(3, "pending_ecc", enabledWord(&e.PendingEnabled))
	} else {
		el(3, "current_ecc", "N/A")
		el(3, "pending_ecc", "N/A")
	}
	closeEl(2, "ecc_mode")
	open(2, "ecc_errors")
	for _, c := range []struct {
		name string
		unc  *uint64
	}{{"volatile", eccCount(e, true)}, {"aggregate", eccCount(e, false)}} {
		open(3, c.name)
		// NVML's total is not split by location; the simulated GPUs
		// count their uncorrectable errors in DRAM (HBM).
		corr, sram, dram := "N/A", "N/A", "N/A"
		if c.unc != nil {
			corr, sram, dram = "0", "0", strconv.FormatUint(*c.unc, 10)
		}
		el(4, "sram_correctable", corr)
		el(4, "sram_uncorrectable", sram)
		el(4, "dram_correctable", corr)
		el(4, "dram_uncorrectable", dram)
		closeEl(3, c.name)
	}
	closeEl(2, "ecc_errors")
	if rr := g.RemappedRows; rr != nil {
		open(2, "remapped_rows")
		el(3, "remapped_row_corr", strconv.Itoa(rr.Corrected))
		el(3, "remapped_row_unc", strconv.Itoa(rr.Uncorrected))
		el(3, "remapped_row_pending", yesNo(rr.Pending))
		el(3, "remapped_row_failure", yesNo(rr.Failure))
		closeEl(2, "remapped_rows")
	} else {
		el(2, "remapped_rows", "N/A")
	}
}

func eccCount(e *nvmlfacts.ECC, volatile bool) *uint64 {
	switch {
	case e == nil:
		return nil
	case volatile:
		return e.VolatileUncorrected
	}
	return e.AggregateUncorrected
}

// renderSMITopo writes rep's topology as `nvidia-smi topo -m` prints it:
// a GPU pair joined by NVLink shows NV# (the links both GPUs have up to
// their NVSwitches, the lower count of the two: a link down on one GPU
// lowers every pair it is in), other pairs their PCIe level; then one
// column per NIC, the CPU and NUMA affinity, the NIC rows (nicLevel places
// two NICs; NVML answers GPU–NIC levels only) and the legends.
func renderSMITopo(rep *nvmlfacts.Report, nics []nvmlfacts.NIC, nicLevel func(a, b string) string) []byte {
	nGPU := len(rep.GPUs)
	pos := map[int]int{} // NVML index -> row
	for i, g := range rep.GPUs {
		pos[g.Index] = i
	}
	activeLinks := func(g nvmlfacts.GPU) int {
		n := 0
		for _, l := range g.NVLinks {
			if l.Active && l.RemoteType == "switch" {
				n++
			}
		}
		return n
	}
	gpuCell := make([][]string, nGPU)
	for i := range gpuCell {
		gpuCell[i] = make([]string, nGPU)
		gpuCell[i][i] = " X "
	}
	for _, p := range rep.GPUTopology {
		a, okA := pos[p.A]
		bb, okB := pos[p.B]
		if !okA || !okB {
			continue
		}
		cell := string(p.Level)
		if nv := min(activeLinks(rep.GPUs[a]), activeLinks(rep.GPUs[bb])); nv > 0 {
			cell = "NV" + strconv.Itoa(nv)
		}
		gpuCell[a][bb], gpuCell[bb][a] = cell, cell
	}
	nicCell := make([][]string, nGPU) // [gpu][nic]
	for i := range nicCell {
		nicCell[i] = make([]string, len(nics))
	}
	nicCol := map[string]int{}
	for k, n := range nics {
		nicCol[n.Name] = k
	}
	for _, p := range rep.NICTopology {
		if i, ok := pos[p.GPU]; ok {
			if k, ok := nicCol[p.NIC]; ok {
				nicCell[i][k] = string(p.Level)
			}
		}
	}
	var b strings.Builder
	header := []string{""}
	for i := range rep.GPUs {
		header = append(header, "GPU"+strconv.Itoa(i))
	}
	for k := range nics {
		header = append(header, "NIC"+strconv.Itoa(k))
	}
	header = append(header, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
	b.WriteString(strings.Join(header, "\t") + "\n")
	for i, g := range rep.GPUs {
		row := []string{"GPU" + strconv.Itoa(i)}
		row = append(row, gpuCell[i]...)
		row = append(row, nicCell[i]...)
		numa := "N/A"
		if g.NUMANode != nil {
			numa = strconv.Itoa(*g.NUMANode)
		}
		// As the capture: CPU list, NUMA node, an empty cell, GPU NUMA ID.
		row = append(row, orNA(g.CPUAffinity), numa, "", "N/A")
		b.WriteString(strings.Join(row, "\t") + "\n")
	}
	for k := range nics {
		row := []string{"NIC" + strconv.Itoa(k)}
		for i := range rep.GPUs {
			row = append(row, nicCell[i][k])
		}
		for j := range nics {
			switch j {
			case k:
				row = append(row, " X ")
			default:
				row = append(row, nicLevel(nics[k].BusID, nics[j].BusID))
			}
		}
		row = append(row, "", "", "", "")
		b.WriteString(strings.Join(row, "\t") + "\n")
	}
	b.WriteString(`
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
`)
	if len(nics) > 0 {
		b.WriteString("\nNIC Legend:\n\n")
		for k, n := range nics {
			fmt.Fprintf(&b, "  NIC%d: %s\n", k, n.Name)
		}
	}
	return []byte(b.String())
}

func orNA(s string) string {
	if s == "" {
		return "N/A"
	}
	return s
}

func enabledWord(b *bool) string {
	switch {
	case b == nil:
		return "N/A"
	case *b:
		return "Enabled"
	}
	return "Disabled"
}

func yesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

// xmlText escapes a value for element content.
func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
