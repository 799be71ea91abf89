package graph

import "strings"

// pciNames names the devices of the simulated profiles and the boards
// gpuform ships modules for, by vendor:device ID, from the PCI ID
// Repository (https://pci-ids.ucw.cz/, Debian package pci.ids 2023.04.10)
// and, for L40S, GH200, GB200 and GB300, the supported-GPU table of
// NVIDIA's open-gpu-kernel-modules README (kb/data/gpu-pci-ids.tsv cites
// the release with the GB parts); provision/sim/roots/README.md cites the
// same. It only labels the picture: an ID not listed shows as the ID.
func pciNames() map[string]string {
	return map[string]string{
		"0x10de:0x2330": "H100 SXM5 80GB",
		"0x10de:0x20b2": "A100 SXM4 80GB",
		"0x10de:0x26b9": "L40S",
		"0x10de:0x2342": "GH200",
		"0x10de:0x2941": "GB200",
		"0x10de:0x31c2": "GB300",
		"0x15b3:0x1021": "ConnectX-7",
		"0x15b3:0x101b": "ConnectX-6",
		"0x15b3:0x101d": "ConnectX-6 Dx",
		"0x144d:0xa808": "Samsung NVMe SSD SM981/PM981/PM983",
	}
}

// pciName is the device's name, or its IDs as lspci -n writes them.
func pciName(vendor, device string) string {
	if s, ok := pciNames()[vendor+":"+device]; ok {
		return s
	}
	return strings.TrimPrefix(vendor, "0x") + ":" + strings.TrimPrefix(device, "0x")
}
