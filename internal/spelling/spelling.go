// Package spelling is the one place where gpuform decides how an id or a
// unit is written in human output, so that every command and format spells
// the same thing the same way (issue 34: a GPU's bus id was written three
// ways, one limit as "64MiB", 65536 and 67108864):
//
//   - PCI bus ids as nvidia-smi and NVML print them, "00000000:C3:00.0",
//     the form an operator pastes into nvidia-smi -i, whatever form the
//     source wrote (sysfs "0000:c3:00.0", lspci "c3:00.0", the kernel's
//     Xid "PCI:0000:c3:00");
//   - sizes as a spec writes them, in the largest binary unit that divides
//     them ("64MiB", "16GiB"), "unlimited" for no limit;
//   - host lists folded into Slurm-style ranges (internal/hostrange).
//
// Machine output (JSON, Prometheus, JUnit) keeps the raw value: these
// functions are for text a person reads. Nothing here knows about specs,
// resources or nodes.
package spelling

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/hostrange"
)

// BusID writes a PCI address the way nvidia-smi does: an 8-digit domain
// and upper-case hex, "00000000:C3:00.0". It accepts sysfs's
// "0000:c3:00.0", NVML's own form, lspci's "c3:00.0" (domain 0) and the
// kernel log's "PCI:0000:c3:00" (no function: a GPU is function 0). Text
// that is not a PCI address is returned as it is, so a report never loses
// what the host said.
func BusID(s string) string {
	d, b, v, f, ok := parseBusID(s)
	if !ok {
		return s
	}
	return fmt.Sprintf("%08X:%02X:%02X.%X", d, b, v, f)
}

// IsBusID reports whether s is a PCI address in one of the forms BusID
// reads.
func IsBusID(s string) bool {
	_, _, _, _, ok := parseBusID(s)
	return ok
}

func parseBusID(s string) (dom, bus, dev, fn uint64, ok bool) {
	t := strings.TrimSpace(s)
	if len(t) >= 4 && strings.EqualFold(t[:4], "pci:") {
		t = t[4:]
	}
	parts := strings.Split(t, ":")
	var ds, bs, devfn string
	switch len(parts) {
	case 2:
		ds, bs, devfn = "0", parts[0], parts[1]
	case 3:
		ds, bs, devfn = parts[0], parts[1], parts[2]
	default:
		return 0, 0, 0, 0, false
	}
	vs, fs, hasFn := strings.Cut(devfn, ".")
	if !hasFn {
		fs = "0"
	}
	if len(ds) > 8 || len(bs) != 2 || len(vs) != 2 || len(fs) != 1 {
		return 0, 0, 0, 0, false
	}
	var e1, e2, e3, e4 error
	dom, e1 = strconv.ParseUint(ds, 16, 32)
	bus, e2 = strconv.ParseUint(bs, 16, 8)
	dev, e3 = strconv.ParseUint(vs, 16, 8)
	fn, e4 = strconv.ParseUint(fs, 16, 8)
	if e1 != nil || e2 != nil || e3 != nil || e4 != nil || dev > 0x1f || fn > 7 {
		return 0, 0, 0, 0, false
	}
	return dom, bus, dev, fn, true
}

// Bytes writes n in the largest binary unit that divides it exactly, as a
// spec writes a size ("64MiB", "2TiB"), and in bytes ("1000B") when none
// does.
func Bytes(n uint64) string {
	units := []string{"TiB", "GiB", "MiB", "KiB"}
	for i, u := range units {
		mult := uint64(1) << (10 * (4 - i))
		if n >= mult && n%mult == 0 {
			return strconv.FormatUint(n/mult, 10) + u
		}
	}
	return strconv.FormatUint(n, 10) + "B"
}

// Unlimited is how a size with no limit is written.
const Unlimited = "unlimited"

// Size rewrites one size that a tool's or file's own text gives in unit
// bytes per count (pam_limits counts KiB: 1024; daemon.json bytes: 1; 0
// for Docker's suffixed "16G", "64m" or plain bytes) in the spec's form.
// "unlimited", "infinity" and -1 are Unlimited. ok is false for text that
// is not such a size, which the caller shows as it is.
func Size(s string, unit uint64) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "unlimited" || s == "-1" || s == "infinity" {
		return Unlimited, true
	}
	if unit == 0 {
		unit = 1
		if i := strings.IndexAny(s, "bkKmMgGtT"); i >= 0 && i == len(s)-1 {
			if j := strings.IndexByte("kmgt", strings.ToLower(s[i:])[0]); j >= 0 {
				unit = uint64(1) << (10 * (1 + j))
			}
			s = s[:i]
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || (unit > 1 && n > (1<<64-1)/unit) {
		return "", false
	}
	return Bytes(n * unit), true
}

// Hosts writes host names as every report does: Slurm-style ranges where
// names differ only in a number ("gpu[001-003,007]",
// "sim://hgx-h100-stale/gpu[01-04]"), the others as they are.
func Hosts(names []string) string { return hostrange.Fold(names) }
