package verify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// vbiosOf lists the host's GPUs by VBIOS version, versions in first-seen
// order, and the GPUs that report none.
func vbiosOf(rep *nvmlfacts.Report) (order []string, by map[string][]string, none []string) {
	by = map[string][]string{}
	for _, g := range rep.GPUs {
		name := fmt.Sprintf("gpu%d", g.Index)
		if g.VBIOS == "" {
			none = append(none, name)
			continue
		}
		if _, ok := by[g.VBIOS]; !ok {
			order = append(order, g.VBIOS)
		}
		by[g.VBIOS] = append(by[g.VBIOS], name)
	}
	return order, by, none
}

// checkVBIOS judges nvml.vbios when the spec pins firmware { gpu_vbios }:
// every GPU reports exactly that version. A GPU that reports none is an
// error (not a pass); drift between the host's GPUs fails naming each.
func checkVBIOS(exp Expectation, rep *nvmlfacts.Report) []CheckResult {
	if exp.VBIOS == "" || rep == nil {
		return nil
	}
	r := CheckResult{ID: string(CheckVBIOS), Expected: exp.VBIOS}
	order, by, none := vbiosOf(rep)
	var seen []string
	for _, v := range order {
		seen = append(seen, v+" ("+strings.Join(by[v], ",")+")")
	}
	r.Observed = strings.Join(seen, "; ")
	var bad []string
	for _, v := range order {
		if v != exp.VBIOS {
			bad = append(bad, fmt.Sprintf("%s run%s VBIOS %s", strings.Join(by[v], ", "), map[bool]string{true: "s", false: ""}[len(by[v]) == 1], v))
		}
	}
	switch {
	case len(bad) > 0:
		r.Status, r.Message = StatusFail, strings.Join(bad, "; ")+", the spec pins "+exp.VBIOS
	case len(none) > 0 || len(order) == 0:
		r.Status, r.Message = StatusError, "no VBIOS version reported for "+orAll(none)
	default:
		r.Status = StatusPass
	}
	return []CheckResult{r}
}

func orAll(gpus []string) string {
	if len(gpus) == 0 {
		return "any GPU"
	}
	return strings.Join(gpus, ", ")
}

// HostVBIOS is the one VBIOS version all of a host's GPUs report, "" when
// they report none or differ (the runner compares hosts of a domain by it).
func HostVBIOS(rep *nvmlfacts.Report) string {
	if rep == nil {
		return ""
	}
	order, _, none := vbiosOf(rep)
	if len(order) != 1 || len(none) > 0 || slices.Contains(order, "") {
		return ""
	}
	return order[0]
}

// nicFirmwareOf lists the host's RDMA adapters by firmware version,
// versions in name order of their first adapter, and the adapters that
// report none.
func nicFirmwareOf(f *facts.Node) (order []string, by map[string][]string, none []string) {
	by = map[string][]string{}
	for _, d := range f.RDMA {
		if d.FirmwareVersion == "" {
			none = append(none, d.Name)
			continue
		}
		if _, ok := by[d.FirmwareVersion]; !ok {
			order = append(order, d.FirmwareVersion)
		}
		by[d.FirmwareVersion] = append(by[d.FirmwareVersion], d.Name)
	}
	return order, by, none
}

// checkNICFirmware judges nic.firmware when the spec pins firmware {
// nic_firmware }: every RDMA adapter reports exactly that version, each
// one that differs named.
func checkNICFirmware(exp Expectation, f *facts.Node) []CheckResult {
	if exp.NICFirmware == "" {
		return nil
	}
	r := CheckResult{ID: string(CheckNICFirmware), Expected: exp.NICFirmware}
	if f == nil {
		r.Status, r.Message = StatusError, "no probe facts to read the NICs' firmware from"
		return []CheckResult{r}
	}
	order, by, none := nicFirmwareOf(f)
	var seen, bad []string
	for _, v := range order {
		seen = append(seen, v+" ("+strings.Join(by[v], ",")+")")
		if v != exp.NICFirmware {
			bad = append(bad, fmt.Sprintf("%s run%s firmware %s", strings.Join(by[v], ", "), map[bool]string{true: "s", false: ""}[len(by[v]) == 1], v))
		}
	}
	r.Observed = strings.Join(seen, "; ")
	switch {
	case len(bad) > 0:
		r.Status, r.Message = StatusFail, strings.Join(bad, "; ")+", the spec pins "+exp.NICFirmware
	case len(f.RDMA) == 0:
		r.Status, r.Message = StatusError, "the host has no RDMA adapter to judge"
	case len(none) > 0:
		r.Status, r.Message = StatusError, "no firmware version reported for "+strings.Join(none, ", ")
	default:
		r.Status = StatusPass
	}
	return []CheckResult{r}
}

// checkBIOS judges host.bios when the spec pins firmware { bios }.
func checkBIOS(exp Expectation, f *facts.Node) []CheckResult {
	if exp.BIOS == "" {
		return nil
	}
	r := CheckResult{ID: string(CheckBIOS), Expected: exp.BIOS}
	switch v := HostBIOS(f); {
	case f == nil:
		r.Status, r.Message = StatusError, "no probe facts to read the BIOS version from"
	case v == "":
		r.Status, r.Message = StatusError, "the host reports no BIOS version (/sys/class/dmi/id/bios_version)"
	case v != exp.BIOS:
		r.Observed = v
		r.Status, r.Message = StatusFail, "the host runs BIOS "+v+", the spec pins "+exp.BIOS
	default:
		r.Observed, r.Status = v, StatusPass
	}
	return []CheckResult{r}
}

// checkBMC judges host.bmc when the spec pins firmware { bmc }. A BMC
// not read (no ipmitool, no /dev/ipmi0, a failed read) is an error: the
// pin is not verifiable, so never a pass.
func checkBMC(exp Expectation, f *facts.Node) []CheckResult {
	if exp.BMC == "" {
		return nil
	}
	r := CheckResult{ID: string(CheckBMC), Expected: exp.BMC}
	switch v := HostBMC(f); {
	case f == nil:
		r.Status, r.Message = StatusError, "no probe facts to read the BMC's firmware from"
	case f.BMC == nil:
		r.Status, r.Message = StatusError, "the BMC was not read: the node has no ipmitool or no /dev/ipmi0, so the pin cannot be verified"
	case v == "":
		r.Status, r.Message = StatusError, "the BMC was not read: "+f.BMC.Error
	case v != exp.BMC:
		r.Observed = v
		r.Status, r.Message = StatusFail, "the host's BMC runs firmware "+v+", the spec pins "+exp.BMC
	default:
		r.Observed, r.Status = v, StatusPass
	}
	return []CheckResult{r}
}

// HostBMC is the host's BMC firmware revision, "" when not read.
func HostBMC(f *facts.Node) string {
	if f == nil || f.BMC == nil {
		return ""
	}
	return f.BMC.Firmware
}

// HostBIOS is the host's BIOS version, "" when not read.
func HostBIOS(f *facts.Node) string {
	if f == nil || f.BIOS == nil {
		return ""
	}
	return f.BIOS.Version
}

// HostNICFirmware is the one firmware version all of a host's RDMA
// adapters report, "" when there are none, one reports none, or they
// differ (the runner compares hosts of a domain by it).
func HostNICFirmware(f *facts.Node) string {
	if f == nil {
		return ""
	}
	order, _, none := nicFirmwareOf(f)
	if len(order) != 1 || len(none) > 0 {
		return ""
	}
	return order[0]
}

// Firmware is what the runner compares across an NVLink domain besides
// the GPUs' VBIOS (which it reads from the NVML report).
type Firmware struct {
	// NIC is HostNICFirmware; NICSeen says the host has RDMA adapters
	// at all (so "" means they differ or report none).
	NIC     string
	NICSeen bool
	// BIOS is HostBIOS.
	BIOS string
	// BMC is HostBMC.
	BMC string
}

// FirmwareOf returns the host's firmware facts; nil without probe facts.
func FirmwareOf(f *facts.Node) *Firmware {
	if f == nil {
		return nil
	}
	return &Firmware{NIC: HostNICFirmware(f), NICSeen: len(f.RDMA) > 0, BIOS: HostBIOS(f), BMC: HostBMC(f)}
}
