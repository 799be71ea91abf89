package nvmlfacts

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSysfsTopology builds a small /sys tree: host bridge pci0000:00 with a
// switch (upstream 01:00.0, downstream 02:00.0 and 02:01.0) holding a GPU
// and a NIC, a nested switch below 02:02.0 holding a second GPU, a second
// host bridge on the same NUMA node and a third on another node.
func TestSysfsTopology(t *testing.T) {
	root := t.TempDir()
	devs := map[string]struct {
		path string
		numa string
	}{
		"0000:03:00.0": {"pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", "0"},                           // GPU A
		"0000:04:00.0": {"pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0", "0"},                           // NIC A
		"0000:07:00.0": {"pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:05:00.0/0000:06:00.0/0000:07:00.0", "0"}, // GPU B
		"0000:09:00.0": {"pci0000:00/0000:00:03.0/0000:09:00.0", "0"},                                                     // NIC on another root port
		"0000:41:00.0": {"pci0000:40/0000:40:01.0/0000:41:00.0", "0"},                                                     // other host bridge, node 0
		"0000:c1:00.0": {"pci0000:c0/0000:c0:01.0/0000:c1:00.0", "1"},                                                     // node 1
	}
	for addr, d := range devs {
		full := filepath.Join(root, "sys/devices", d.path)
		if err := os.MkdirAll(full, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(full, "numa_node"), []byte(d.numa+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(root, "sys/bus/pci/devices", addr)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(filepath.Dir(link), full)
		if err := os.Symlink(rel, link); err != nil {
			t.Fatal(err)
		}
	}
	topo := SysfsTopology{Root: root}
	tests := []struct {
		a, b string
		want Level
	}{
		{"00000000:03:00.0", "0000:04:00.0", LevelPIX}, // NVML 8-digit domain vs sysfs form
		{"0000:03:00.0", "0000:07:00.0", LevelPXB},
		{"03:00.0", "0000:09:00.0", LevelPHB},
		{"0000:03:00.0", "0000:41:00.0", LevelNode},
		{"0000:03:00.0", "0000:c1:00.0", LevelSys},
	}
	for _, tt := range tests {
		t.Run(tt.a+"-"+tt.b, func(t *testing.T) {
			got, err := topo.CommonAncestor(tt.a, tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := topo.CommonAncestor("0000:03:00.0", "0000:ee:00.0"); err == nil {
		t.Error("missing device accepted")
	}
	// DiscoverNICs reads /sys/class/infiniband/<dev>/device links.
	ib := filepath.Join(root, "sys/class/infiniband/mlx5_0")
	if err := os.MkdirAll(ib, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "sys/devices", devs["0000:04:00.0"].path), filepath.Join(ib, "device")); err != nil {
		t.Fatal(err)
	}
	nics, err := DiscoverNICs(root)
	if err != nil || len(nics) != 1 || nics[0] != (NIC{Name: "mlx5_0", BusID: "0000:04:00.0"}) {
		t.Errorf("DiscoverNICs: %v %v", nics, err)
	}
}

func TestNormalizeBusID(t *testing.T) {
	good := map[string]string{
		"00000000:18:00.0": "0000:18:00.0",
		"0000:1B:00.0":     "0000:1b:00.0",
		"18:00.0":          "0000:18:00.0",
		"0000:18:00":       "0000:18:00.0",
	}
	for in, want := range good {
		if got, err := NormalizeBusID(in); err != nil || got != want {
			t.Errorf("%q: got %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "zz:00.0", "0000:18:20.0", "0000:18:00.9", "1:2:3:4"} {
		if _, err := NormalizeBusID(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
