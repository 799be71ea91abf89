package sim

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestProfileLayersAgree holds every profile to its one fault description
// (@faults): nothing a profile writes by hand may say a device is faulted
// (its GPU links, RDMA ports, NVML faults and nvidia-smi answers come only
// from the description), the kernel log's Xid lines name exactly the GPUs the
// description gives an Xid, and every slow device in the bench replays and
// every GPU link below its maximum in sysfs is one the description names.
// A hardware layer (roots/hw) is the healthy baseline and may write them.
func TestProfileLayersAgree(t *testing.T) {
	handWritten := regexp.MustCompile(`(^|/)(current_link_speed|current_link_width|max_link_speed|max_link_width)$|^sys/class/infiniband/|/infiniband/[^/]+/ports/`)
	xidLine := regexp.MustCompile(`NVRM: Xid \(PCI:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\): (\d+),`)
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			a, err := load("roots/" + name + ".txtar")
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range a.Files {
				switch {
				case f.Name == "@ib", f.Name == "@pci":
					t.Errorf("%s: a profile describes device state in @faults, not in %s", name, f.Name)
				case f.Name == NVMLFaultsFile, strings.HasPrefix(f.Name, NvidiaSMIDir+"/"), handWritten.MatchString(f.Name):
					t.Errorf("%s: %s is written by hand; describe the fault in @faults", name, f.Name)
				}
			}
			desc, err := Faults(name)
			if err != nil {
				t.Fatal(err)
			}
			root, err := Materialize(name, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			described := map[string]DeviceFault{}
			for _, f := range desc {
				described[f.Device] = f
			}

			// The kernel log against the description.
			kmsg, _ := os.ReadFile(filepath.Join(root, "var/lib/gpuform-sim/kmsg"))
			logged := map[string]int{}
			for _, m := range xidLine.FindAllStringSubmatch(string(kmsg), -1) {
				n, _ := strconv.Atoi(m[2])
				logged[strings.ToLower(m[1])+".0"] = n
			}
			for bus, xid := range logged {
				if f, ok := described[bus]; !ok || f.XID != xid {
					t.Errorf("the kernel log has Xid %d for %s; the description says %+v", xid, bus, f)
				}
			}
			for _, f := range desc {
				if f.XID > 0 && logged[f.Device] != f.XID {
					t.Errorf("the description gives %s Xid %d; the kernel log has %d", f.Device, f.XID, logged[f.Device])
				}
			}

			// sysfs: every GPU link below its maximum is described.
			devs, _ := filepath.Glob(filepath.Join(root, "sys/bus/pci/devices/*"))
			for _, d := range devs {
				vendor, _ := os.ReadFile(filepath.Join(d, "vendor"))
				class, _ := os.ReadFile(filepath.Join(d, "class"))
				if strings.TrimSpace(string(vendor)) != "0x10de" || !strings.HasPrefix(string(class), "0x03") {
					continue
				}
				bus := filepath.Base(d)
				read := func(f string) string { b, _ := os.ReadFile(filepath.Join(d, f)); return strings.TrimSpace(string(b)) }
				if read("current_link_width") != read("max_link_width") && described[bus].Width == 0 {
					t.Errorf("GPU %s: sysfs width x%s of x%s, not in the description", bus, read("current_link_width"), read("max_link_width"))
				}
				if read("current_link_speed") != read("max_link_speed") && !described[bus].Idle {
					t.Errorf("GPU %s: sysfs speed %s of %s, not in the description", bus, read("current_link_speed"), read("max_link_speed"))
				}
			}

			// bench: every device-specific RDMA replay and every slow host
			// copy belongs to a described device.
			reports, _ := filepath.Glob(filepath.Join(root, BenchDir, "ib_write_bw", "report-*.txt"))
			for _, r := range reports {
				dev := strings.TrimSuffix(strings.TrimPrefix(path.Base(filepath.ToSlash(r)), "report-"), ".txt")
				if _, ok := described[dev].Port["rate"]; !ok {
					t.Errorf("bench replays %s for %s, whose rate the description does not give", filepath.Base(r), dev)
				}
			}
			copies, _ := filepath.Glob(filepath.Join(root, BenchDir, "nvbandwidth", "*_to_*_memcpy_*.txt"))
			for _, c := range copies {
				if !strings.Contains(c, "host") {
					continue
				}
				b, _ := os.ReadFile(c)
				vals := hostCopyRow(string(b))
				med := median(vals)
				for i, v := range vals {
					if v >= 0.7*med {
						continue
					}
					bus, ok := nthGPU(root, i)
					if !ok || described[bus].Width == 0 {
						t.Errorf("%s: GPU %d copies at %.2f of a median %.2f GB/s; the description names no fault on it", filepath.Base(c), i, v, med)
					}
				}
			}
		})
	}
}

func hostCopyRow(text string) []float64 {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		f := strings.Fields(l)
		if i > 0 && len(f) > 1 && f[0] == "0" && strings.HasPrefix(strings.TrimSpace(lines[i-1]), "0 ") {
			var out []float64
			for _, v := range f[1:] {
				x, _ := strconv.ParseFloat(v, 64)
				out = append(out, x)
			}
			return out
		}
	}
	return nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// nthGPU is the PCI address of CUDA device i of the root.
func nthGPU(root string, i int) (string, bool) {
	devs, _ := filepath.Glob(filepath.Join(root, "sys/bus/pci/devices/*"))
	for _, d := range devs {
		if n, err := cudaIndex(root, filepath.Base(d)); err == nil && n == i {
			return filepath.Base(d), true
		}
	}
	return "", false
}
