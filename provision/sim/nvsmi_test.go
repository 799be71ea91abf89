package sim

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/smi"
)

// bondedNVLinks is the NV# a healthy node of each simulated system prints
// for every GPU pair in `nvidia-smi topo -m`, from real captures:
// 8x H100 SXM NV18 (smi/testdata/topo/topo-matrix-8xH100-nv18-no-nic-rhel-ai.txt),
// 8x A100 SXM NV12 (topo-m-8xA100-nv12-17nic.txt). The L40S has no NVLink
// (PCIe levels only) and GH200 nodes have one GPU. A GB200 NVL72 tray's
// four GPUs print NV18 (NVIDIA/k8s-test-infra#371; the GB300 tray is
// modelled on it).
var bondedNVLinks = map[string]int{nvmlfacts.MockDGXH100: 18, nvmlfacts.MockDGXA100: 12, nvmlfacts.MockGB200Tray: 18, nvmlfacts.MockGB300Tray: 18}

// TestNvidiaSMIRoundTrip runs every profile's nvidia-smi and reads what it
// prints with the parsers verify reads real captures with; what they read
// must be the profile's own data: the driver its /proc says is loaded, the
// NVIDIA GPUs of its sysfs less those its fault description says fell off
// the bus, each GPU's link width and generation from its sysfs maximum,
// narrowed where the description gives a width and at Gen1 (clock event
// reason GPU idle) where it says the GPU idles, its NUMA node and that
// node's CPUs from sysfs, every RDMA device of the node as a NIC column,
// and the NV# of a real node of the same system for every GPU pair.
func TestNvidiaSMIRoundTrip(t *testing.T) {
	driverRE := regexp.MustCompile(`Kernel Module(?: for \w+)?\s+(\d+\.\d+(?:\.\d+)?)`)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			system, ok := mockSystem(name)
			if !ok {
				t.Fatalf("profile %s has no simulated NVML", name)
			}
			root, err := Materialize(name, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			tr := New(Scheme+name, root)
			run := func(cmd string) transport.Result {
				res, err := tr.Run(context.Background(), transport.Command{Script: cmd})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			ver, err := os.ReadFile(filepath.Join(root, "proc/driver/nvidia/version"))
			if err != nil {
				// No driver loaded: nvidia-smi fails as it does then.
				res := run(smi.Command)
				if res.ExitCode != 9 || !strings.Contains(string(res.Stdout), "couldn't communicate with the NVIDIA driver") {
					t.Errorf("no driver: exit %d %q", res.ExitCode, res.Stdout)
				}
				return
			}
			m := driverRE.FindSubmatch(ver)
			if m == nil {
				t.Fatalf("no driver version in %q", ver)
			}
			desc, err := Faults(name)
			if err != nil {
				t.Fatal(err)
			}
			described := map[string]DeviceFault{}
			for _, f := range desc {
				described[f.Device] = f
			}

			res := run(smi.Command)
			if res.ExitCode != 0 {
				t.Fatalf("%s: exit %d %s", smi.Command, res.ExitCode, res.Stderr)
			}
			rep, err := smi.Parse(res.Stdout)
			if err != nil {
				t.Fatal(err)
			}
			if rep.DriverVersion != string(m[1]) {
				t.Errorf("driver %q, the node has %s loaded", rep.DriverVersion, m[1])
			}
			res = run(smi.TopoCommand)
			if res.ExitCode != 0 {
				t.Fatalf("%s: exit %d %s", smi.TopoCommand, res.ExitCode, res.Stderr)
			}
			top, err := smi.ParseTopo(res.Stdout)
			if err != nil {
				t.Fatal(err)
			}
			if len(top.Warnings) > 0 {
				t.Errorf("topo -m warnings: %v", top.Warnings)
			}

			// The GPUs: sysfs's, in PCI order, less the lost ones.
			var want []string
			devs, _ := filepath.Glob(filepath.Join(root, "sys/bus/pci/devices/*"))
			for _, d := range devs {
				v, _ := os.ReadFile(filepath.Join(d, "vendor"))
				c, _ := os.ReadFile(filepath.Join(d, "class"))
				if strings.TrimSpace(string(v)) == "0x10de" && strings.HasPrefix(string(c), "0x03") && !described[filepath.Base(d)].OffBus {
					want = append(want, filepath.Base(d))
				}
			}
			sort.Strings(want)
			var got []string
			for _, g := range rep.GPUs {
				b, err := nvmlfacts.NormalizeBusID(g.BusID)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, b)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("nvidia-smi -q -x lists GPUs %v; sysfs less the lost ones has %v", got, want)
			}
			if len(top.GPUs) != len(want) {
				t.Errorf("topo -m has %d GPU rows, want %d", len(top.GPUs), len(want))
			}

			// The driver numbers /dev/nvidiaN as it probes the GPUs, in PCI
			// order, and a GPU that falls off the bus later keeps no one
			// else's number: the minor is the GPU's place among all of
			// sysfs's GPUs, the lost ones included.
			var all []string
			for _, d := range devs {
				v, _ := os.ReadFile(filepath.Join(d, "vendor"))
				c, _ := os.ReadFile(filepath.Join(d, "class"))
				if strings.TrimSpace(string(v)) == "0x10de" && strings.HasPrefix(string(c), "0x03") {
					all = append(all, filepath.Base(d))
				}
			}
			sort.Strings(all)
			for i, bus := range want {
				g := rep.GPUs[i]
				if g.MinorNumber == nil || *g.MinorNumber != slices.Index(all, bus) {
					t.Errorf("%s: minor_number %v, want %d", bus, g.MinorNumber, slices.Index(all, bus))
				}
				dev := filepath.Join(root, "sys/bus/pci/devices", bus)
				read := func(f string) string { b, _ := os.ReadFile(filepath.Join(dev, f)); return strings.TrimSpace(string(b)) }
				f := described[bus]
				maxW, _ := strconv.Atoi(read("max_link_width"))
				maxGen := genOf(read("max_link_speed"))
				wantW, wantGen := maxW, maxGen
				if f.Width > 0 {
					wantW = f.Width
				}
				if f.Idle {
					wantGen = 1
				}
				switch {
				case g.PCIe == nil && (system == nvmlfacts.MockGH200 || system == nvmlfacts.MockGB200Tray || system == nvmlfacts.MockGB300Tray):
					// The Grace systems' simulated NVML reports no PCIe
					// link (no public output says what a GH200 or a
					// GB200/GB300 GPU on NVLink-C2C reports), so neither
					// path judges one.
				case g.PCIe == nil:
					t.Errorf("%s: no PCIe link in -q -x", bus)
				case g.PCIe.MaxWidth != maxW || g.PCIe.CurrentWidth != wantW || g.PCIe.MaxGen != maxGen || g.PCIe.CurrentGen != wantGen:
					t.Errorf("%s: -q -x reads Gen%d x%d of Gen%d x%d; the profile has Gen%d x%d of Gen%d x%d",
						bus, g.PCIe.CurrentGen, g.PCIe.CurrentWidth, g.PCIe.MaxGen, g.PCIe.MaxWidth, wantGen, wantW, maxGen, maxW)
				}
				idle := g.Throttle != nil && slices.Contains(g.Throttle.Active, nvmlfacts.ThrottleGPUIdle)
				if idle != f.Idle {
					t.Errorf("%s: clock event reason GPU idle %v, the description says idle %v", bus, idle, f.Idle)
				}
				numa, _ := strconv.Atoi(read("numa_node"))
				cpus, _ := os.ReadFile(filepath.Join(root, "sys/devices/system/node", "node"+strconv.Itoa(numa), "cpulist"))
				if i < len(top.GPUs) {
					tg := top.GPUs[i]
					if tg.NUMA == nil || *tg.NUMA != numa || tg.CPUAffinity != strings.TrimSpace(string(cpus)) {
						t.Errorf("%s: topo -m affinity %q NUMA %v; sysfs says node %d, CPUs %s", bus, tg.CPUAffinity, tg.NUMA, numa, strings.TrimSpace(string(cpus)))
					}
				}
			}

			// The NICs: every RDMA device of the node.
			ib, _ := os.ReadDir(filepath.Join(root, "sys/class/infiniband"))
			var wantNICs []string
			for _, e := range ib {
				wantNICs = append(wantNICs, e.Name())
			}
			gotNICs := slices.Clone(top.NICs)
			sort.Strings(gotNICs)
			if !slices.Equal(gotNICs, wantNICs) {
				t.Errorf("topo -m NICs %v; sysfs has %v", top.NICs, wantNICs)
			}
			if n := len(want) * len(wantNICs); len(top.NICPairs) != n {
				t.Errorf("topo -m has %d GPU–NIC cells, want %d", len(top.NICPairs), n)
			}

			// NV# per pair as a real node of the system prints it.
			if n := len(want); len(top.GPUPairs) != n*(n-1)/2 {
				t.Errorf("topo -m has %d GPU pairs, want %d", len(top.GPUPairs), n*(n-1)/2)
			}
			for _, p := range top.GPUPairs {
				if p.NVLinks != bondedNVLinks[system] || (p.NVLinks == 0) != (p.Level != "") {
					t.Errorf("GPU%d–GPU%d: NV%d level %q, a real %s prints NV%d", p.A, p.B, p.NVLinks, p.Level, system, bondedNVLinks[system])
				}
			}
		})
	}
}

// genOf is the PCIe generation of a sysfs link speed ("32.0 GT/s PCIe").
func genOf(speed string) int {
	gt, _, _ := strings.Cut(speed, " ")
	return map[string]int{"2.5": 1, "5.0": 2, "8.0": 3, "16.0": 4, "32.0": 5, "64.0": 6}[gt]
}

// TestNvidiaSMIFollowsDriver: the driver nvidia-smi reports is the one
// loaded at the time of the call, which apply and reboot change.
func TestNvidiaSMIFollowsDriver(t *testing.T) {
	root, err := Materialize("hgx-h100-stale", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "proc/driver/nvidia/version")
	if err := os.WriteFile(p, []byte("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := New("sim://hgx-h100-stale", root).Run(context.Background(), transport.Command{Script: smi.Command})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v exit %d %s", err, res.ExitCode, res.Stderr)
	}
	rep, err := smi.Parse(res.Stdout)
	if err != nil || rep.DriverVersion != "580.95.05" {
		t.Errorf("driver %q after the node loaded 580.95.05 (%v)", rep.DriverVersion, err)
	}
}
