package nvmlfacts

import (
	"os"
	"path/filepath"
	"sort"
)

// DiscoverNICs lists RDMA devices from /sys/class/infiniband under root
// ("" means "/") with the PCI address their device link points at. A node
// without RDMA devices yields an empty list, not an error.
func DiscoverNICs(root string) ([]NIC, error) {
	dir := filepath.Join(root, "/sys/class/infiniband")
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var nics []NIC
	for _, e := range entries {
		dev, err := filepath.EvalSymlinks(filepath.Join(dir, e.Name(), "device"))
		if err != nil {
			continue // virtual devices (rxe, siw) have no PCI parent
		}
		addr, err := NormalizeBusID(filepath.Base(dev))
		if err != nil {
			continue
		}
		nics = append(nics, NIC{Name: e.Name(), BusID: addr})
	}
	sort.Slice(nics, func(i, j int) bool { return nics[i].Name < nics[j].Name })
	return nics, nil
}
