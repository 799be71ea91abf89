// Package smi reads `nvidia-smi -q -x` into the same nvmlfacts.Report the
// NVML agent writes. It is verify's fallback when the agent cannot run on a
// node (no binary for its CPU architecture, a glibc too old for it, a
// controller built without cgo): the report then says "nvidia-smi" as its
// source and lists the facts this path cannot see (NVLink, NUMA node, GPU
// pair and NIC topology, XID events) in NotCollected, so checks on them are
// skipped rather than failed.
//
// It understands the v11 wording of older drivers (clocks_throttle_reasons,
// power_readings), the v12 wording of drivers 535 and later
// (clocks_event_reasons, gpu_power_readings) and the v13 split of SRAM
// uncorrectable errors into parity and SEC-DED counts.
package smi

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// Command is the command line whose output Parse reads.
const Command = "nvidia-smi -q -x"

type log struct {
	XMLName       xml.Name `xml:"nvidia_smi_log"`
	DriverVersion string   `xml:"driver_version"`
	CUDAVersion   string   `xml:"cuda_version"`
	GPUs          []gpu    `xml:"gpu"`
}

type gpu struct {
	ID              string     `xml:"id,attr"`
	ProductName     string     `xml:"product_name"`
	UUID            string     `xml:"uuid"`
	Serial          string     `xml:"serial"`
	MinorNumber     string     `xml:"minor_number"`
	Virtualization  string     `xml:"gpu_virtualization_mode>virtualization_mode"`
	PersistenceMode string     `xml:"persistence_mode"`
	MIG             modePair   `xml:"mig_mode"`
	PCI             pci        `xml:"pci"`
	EventReasons    reasons    `xml:"clocks_event_reasons"`
	ThrottleReasons reasons    `xml:"clocks_throttle_reasons"`
	ECCMode         eccMode    `xml:"ecc_mode"`
	ECCErrors       eccErrors  `xml:"ecc_errors"`
	RetiredPages    retired    `xml:"retired_pages"`
	RemappedRows    remapped   `xml:"remapped_rows"`
	Temperature     string     `xml:"temperature>gpu_temp"`
	GPUPower        powerBlock `xml:"gpu_power_readings"`
	Power           powerBlock `xml:"power_readings"`
}

type modePair struct {
	Current string `xml:"current_mig"`
	Pending string `xml:"pending_mig"`
}

type eccMode struct {
	Current string `xml:"current_ecc"`
	Pending string `xml:"pending_ecc"`
}

type pci struct {
	BusID       string `xml:"pci_bus_id"`
	DeviceID    string `xml:"pci_device_id"`
	MaxGen      string `xml:"pci_gpu_link_info>pcie_gen>max_link_gen"`
	CurrentGen  string `xml:"pci_gpu_link_info>pcie_gen>current_link_gen"`
	DeviceMax   string `xml:"pci_gpu_link_info>pcie_gen>max_device_link_gen"`
	MaxWidth    string `xml:"pci_gpu_link_info>link_widths>max_link_width"`
	CurrenWidth string `xml:"pci_gpu_link_info>link_widths>current_link_width"`
}

// reasons holds either wording's children; XML element names are matched
// by suffix in throttle().
type reasons struct {
	Items []struct {
		XMLName xml.Name
		Value   string `xml:",chardata"`
	} `xml:",any"`
}

type eccCounts struct {
	SRAMUncorrectable       string `xml:"sram_uncorrectable"`
	SRAMUncorrectableParity string `xml:"sram_uncorrectable_parity"`
	SRAMUncorrectableSECDED string `xml:"sram_uncorrectable_secded"`
	DRAMUncorrectable       string `xml:"dram_uncorrectable"`
}

type eccErrors struct {
	Volatile  eccCounts `xml:"volatile"`
	Aggregate eccCounts `xml:"aggregate"`
}

type retired struct {
	SingleBit string `xml:"multiple_single_bit_retirement>retired_count"`
	DoubleBit string `xml:"double_bit_retirement>retired_count"`
	Pending   string `xml:"pending_retirement"`
}

type remapped struct {
	Text      string `xml:",chardata"`
	Corrected string `xml:"remapped_row_corr"`
	Unc       string `xml:"remapped_row_unc"`
	Pending   string `xml:"remapped_row_pending"`
	Failure   string `xml:"remapped_row_failure"`
}

type powerBlock struct {
	Enforced string `xml:"enforced_power_limit"`
	Current  string `xml:"current_power_limit"`
	Limit    string `xml:"power_limit"`
}

// Parse reads one `nvidia-smi -q -x` document. GPUs are indexed in document
// order, which is nvidia-smi's (and NVML's) PCI bus order.
func Parse(data []byte) (*nvmlfacts.Report, error) {
	var l log
	dec := xml.NewDecoder(bytes.NewReader(data))
	// nvidia-smi declares a DTD that is not shipped; nothing to resolve.
	dec.Strict = true
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("parsing %s output: %w", Command, err)
	}
	rep := &nvmlfacts.Report{
		FormatVersion:     jsonformat.Version,
		Source:            nvmlfacts.SourceNvidiaSMI,
		DriverVersion:     strings.TrimSpace(l.DriverVersion),
		CUDADriverVersion: na(l.CUDAVersion),
		GPUs:              []nvmlfacts.GPU{},
		NotCollected:      []string{nvmlfacts.FactNVLink, nvmlfacts.FactNUMA, nvmlfacts.FactTopology, nvmlfacts.FactXID, nvmlfacts.FactFabric},
	}
	for i, g := range l.GPUs {
		rep.GPUs = append(rep.GPUs, convert(i, g))
	}
	return rep, nil
}

func convert(i int, g gpu) nvmlfacts.GPU {
	out := nvmlfacts.GPU{
		Index: i,
		UUID:  strings.TrimSpace(g.UUID),
		Name:  strings.TrimSpace(g.ProductName),
		BusID: strings.TrimSpace(g.PCI.BusID),
	}
	if out.BusID == "" {
		out.BusID = strings.TrimSpace(g.ID)
	}
	out.Serial = na(g.Serial)
	if n, err := strconv.Atoi(na(g.MinorNumber)); err == nil && n >= 0 {
		out.MinorNumber = &n
	}
	out.Virtualization = na(g.Virtualization)
	if id := na(g.PCI.DeviceID); id != "" {
		out.PCIDeviceID = "0x" + strings.ToUpper(id)
	}
	out.PersistenceMode = enabled(g.PersistenceMode)
	if cur := enabled(g.MIG.Current); cur != nil {
		m := &nvmlfacts.MIG{Enabled: *cur}
		if p := enabled(g.MIG.Pending); p != nil {
			m.PendingEnabled = *p
		}
		out.MIG = m
	}
	if cur := enabled(g.ECCMode.Current); cur != nil {
		e := &nvmlfacts.ECC{Enabled: *cur}
		if p := enabled(g.ECCMode.Pending); p != nil {
			e.PendingEnabled = *p
		}
		e.VolatileUncorrected = uncorrected(g.ECCErrors.Volatile)
		e.AggregateUncorrected = uncorrected(g.ECCErrors.Aggregate)
		out.ECC = e
	}
	if rr := g.RemappedRows; rr.Pending != "" || rr.Failure != "" {
		c, _ := atoi(rr.Corrected)
		u, _ := atoi(rr.Unc)
		out.RemappedRows = &nvmlfacts.RemappedRows{Corrected: c, Uncorrected: u, Pending: yes(rr.Pending), Failure: yes(rr.Failure)}
	} else if na(g.RetiredPages.Pending) != "" {
		s, _ := atoi(g.RetiredPages.SingleBit)
		d, _ := atoi(g.RetiredPages.DoubleBit)
		out.RetiredPages = &nvmlfacts.RetiredPages{MultipleSingleBit: s, DoubleBit: d, Pending: yes(g.RetiredPages.Pending)}
	}
	cg, ok1 := atoi(g.PCI.CurrentGen)
	mg, ok2 := atoi(g.PCI.MaxGen)
	cw, ok3 := atoi(strings.TrimSuffix(strings.TrimSpace(g.PCI.CurrenWidth), "x"))
	mw, ok4 := atoi(strings.TrimSuffix(strings.TrimSpace(g.PCI.MaxWidth), "x"))
	if ok1 && ok2 && ok3 && ok4 {
		out.PCIe = &nvmlfacts.PCIeLink{CurrentGen: cg, MaxGen: mg, CurrentWidth: cw, MaxWidth: mw}
		if dm, ok := atoi(g.PCI.DeviceMax); ok {
			out.PCIe.GPUMaxGen = dm
		}
	}
	if t, ok := atoi(strings.TrimSuffix(strings.TrimSpace(g.Temperature), " C")); ok {
		out.TemperatureC = &t
	}
	for _, s := range []string{g.Power.Enforced, g.GPUPower.Current, g.Power.Limit} {
		if w, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), " W"), 64); err == nil {
			out.PowerLimitW = &w
			break
		}
	}
	out.Throttle = throttle(g.EventReasons, "clocks_event_reason_")
	if out.Throttle == nil {
		out.Throttle = throttle(g.ThrottleReasons, "clocks_throttle_reason_")
	}
	return out
}

func throttle(r reasons, prefix string) *nvmlfacts.Throttle {
	if len(r.Items) == 0 {
		return nil
	}
	var active []string
	for _, it := range r.Items {
		name, ok := strings.CutPrefix(it.XMLName.Local, prefix)
		if ok && strings.TrimSpace(it.Value) == "Active" {
			active = append(active, name)
		}
	}
	mask := nvmlfacts.ThrottleMask(active)
	// Keep the names in NVML's bit order so both paths print alike.
	names := nvmlfacts.ThrottleReasonNames(mask)
	for _, a := range active {
		if nvmlfacts.ThrottleMask([]string{a}) == 0 {
			names = append(names, a) // a reason newer than this gpuform
		}
	}
	return &nvmlfacts.Throttle{Mask: mask, Active: names}
}

// uncorrected sums the uncorrectable counters that are present; nil when
// all are N/A (ECC off or unsupported).
func uncorrected(c eccCounts) *uint64 {
	var sum uint64
	seen := false
	for _, s := range []string{c.SRAMUncorrectable, c.SRAMUncorrectableParity, c.SRAMUncorrectableSECDED, c.DRAMUncorrectable} {
		if n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64); err == nil {
			sum += n
			seen = true
		}
	}
	if !seen {
		return nil
	}
	return &sum
}

func na(s string) string {
	s = strings.TrimSpace(s)
	if s == "N/A" {
		return ""
	}
	return s
}

func enabled(s string) *bool {
	switch strings.TrimSpace(s) {
	case "Enabled":
		t := true
		return &t
	case "Disabled":
		f := false
		return &f
	}
	return nil
}

func yes(s string) bool { return strings.TrimSpace(s) == "Yes" }

func atoi(s string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	return n, err == nil
}
