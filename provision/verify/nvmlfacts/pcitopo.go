package nvmlfacts

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PCITopology answers where two PCI devices meet. NVML's own
// GetTopologyCommonAncestor only compares two GPUs, so GPU–NIC pairs are
// answered from the PCI hierarchy, the way `nvidia-smi topo -m` and NCCL do.
type PCITopology interface {
	// CommonAncestor returns the level at which the devices with PCI
	// addresses a and b meet.
	CommonAncestor(a, b string) (Level, error)
}

// SysfsTopology reads the PCI hierarchy from sysfs under Root ("" means
// "/"), so tests and simulated nodes can point it at a fixture tree.
type SysfsTopology struct {
	// Root is prepended to /sys paths.
	Root string
}

// CommonAncestor resolves both devices under /sys/bus/pci/devices and
// compares their paths below /sys/devices:
// different host bridges → NODE or SYS by numa_node; same host bridge but no
// common bridge → PHB; both directly below one common bridge/switch → PIX;
// otherwise PXB.
func (s SysfsTopology) CommonAncestor(a, b string) (Level, error) {
	pa, err := s.chain(a)
	if err != nil {
		return "", err
	}
	pb, err := s.chain(b)
	if err != nil {
		return "", err
	}
	if len(pa) == 0 || len(pb) == 0 || pa[0] != pb[0] {
		na, errA := s.numaNode(a)
		nb, errB := s.numaNode(b)
		if errA != nil || errB != nil || na < 0 || nb < 0 || na != nb {
			// Unknown locality is reported as the farthest level: a
			// check must not pass on a guess.
			return LevelSys, nil
		}
		return LevelNode, nil
	}
	// Drop the host bridge and the devices themselves: what is left are
	// the bridges above each device.
	ba, bb := pa[1:len(pa)-1], pb[1:len(pb)-1]
	common := 0
	for common < len(ba) && common < len(bb) && ba[common] == bb[common] {
		common++
	}
	switch {
	case common == 0:
		return LevelPHB, nil
	case len(ba)-common <= 1 && len(bb)-common <= 1:
		// Each device hangs off a downstream port of the same switch
		// (upstream port is the deepest common bridge).
		return LevelPIX, nil
	default:
		return LevelPXB, nil
	}
}

// chain returns the path components of a device below /sys/devices, e.g.
// ["pci0000:17", "0000:17:01.0", "0000:18:00.0", "0000:19:00.0"].
func (s SysfsTopology) chain(bdf string) ([]string, error) {
	addr, err := NormalizeBusID(bdf)
	if err != nil {
		return nil, err
	}
	link := filepath.Join(s.Root, "/sys/bus/pci/devices", addr)
	real, err := filepath.EvalSymlinks(link)
	if err != nil {
		return nil, fmt.Errorf("PCI device %s: %w", addr, err)
	}
	devices := filepath.Join(s.Root, "/sys/devices")
	if r, err := filepath.EvalSymlinks(devices); err == nil {
		devices = r
	}
	rel, err := filepath.Rel(devices, real)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("PCI device %s resolves outside /sys/devices: %s", addr, real)
	}
	return strings.Split(filepath.ToSlash(rel), "/"), nil
}

func (s SysfsTopology) numaNode(bdf string) (int, error) {
	addr, err := NormalizeBusID(bdf)
	if err != nil {
		return -1, err
	}
	b, err := os.ReadFile(filepath.Join(s.Root, "/sys/bus/pci/devices", addr, "numa_node"))
	if err != nil {
		return -1, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// NormalizeBusID turns the PCI address shapes gpuform meets into sysfs form
// "dddd:bb:dd.f" in lower case: NVML's 8-digit domain "00000000:18:00.0",
// nvidia-smi's, lspci's "18:00.0" (domain 0) and sysfs's own.
func NormalizeBusID(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	parts := strings.Split(s, ":")
	var dom, bus, devfn string
	switch len(parts) {
	case 2:
		dom, bus, devfn = "0", parts[0], parts[1]
	case 3:
		dom, bus, devfn = parts[0], parts[1], parts[2]
	default:
		return "", fmt.Errorf("malformed PCI address %q", s)
	}
	dev, fn, ok := strings.Cut(devfn, ".")
	if !ok {
		fn = "0"
	}
	d, err1 := strconv.ParseUint(dom, 16, 32)
	b, err2 := strconv.ParseUint(bus, 16, 8)
	v, err3 := strconv.ParseUint(dev, 16, 8)
	f, err4 := strconv.ParseUint(fn, 16, 8)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || v > 0x1f || f > 7 {
		return "", fmt.Errorf("malformed PCI address %q", s)
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", d, b, v, f), nil
}
