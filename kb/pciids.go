package kb

import (
	"strings"
)

// GPUDevice is one row of gpu-pci-ids.tsv: a PCI device ID of NVIDIA's and
// the GPU model it is, so that a host's GPUs can be named from the PCI bus
// alone, before any driver is installed.
type GPUDevice struct {
	// DeviceID is the PCI device ID as sysfs prints it ("0x2330").
	DeviceID string
	// ProductName is the product name NVIDIA's table gives the ID.
	ProductName string
	// Model is the gpu-models.tsv row.
	Model GPUModel
	Fact
}

func (kb *KB) loadPCIIDs() error {
	t, err := readTable(kb.fsys, "data/gpu-pci-ids.tsv", "device_id", "product_name", "model", "status", "source")
	if err != nil {
		return err
	}
	kb.pciIDs = map[string]GPUDevice{}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		id := strings.ToLower(r.get("device_id"))
		if !strings.HasPrefix(id, "0x") || len(id) != 6 {
			return r.errorf("device_id %q: want 0x and four hex digits", r.get("device_id"))
		}
		if _, dup := kb.pciIDs[id]; dup {
			return r.errorf("device_id %s is listed twice", id)
		}
		var model GPUModel
		found := false
		for _, g := range kb.gpus {
			if g.Name == r.get("model") {
				model, found = g, true
			}
		}
		if !found {
			return r.errorf("model %q is no model of gpu-models.tsv", r.get("model"))
		}
		kb.pciIDs[id] = GPUDevice{DeviceID: id, ProductName: r.get("product_name"), Model: model, Fact: r.fact(st, "source", "")}
	}
	return nil
}

// GPUByPCIID returns the GPU model of an NVIDIA PCI device ID ("0x2330",
// any case); ok is false for an ID the table does not hold.
func (kb *KB) GPUByPCIID(deviceID string) (GPUDevice, bool) {
	d, ok := kb.pciIDs[strings.ToLower(deviceID)]
	return d, ok
}
