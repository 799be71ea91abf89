package importer

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// TestShmSize: a whole percentage of RAM is written as one, anything else
// as bytes.
func TestShmSize(t *testing.T) {
	const gib = 1 << 30
	ram := uint64(2113400368) * 1024 // hgx-h100's MemTotal
	for _, tc := range []struct {
		name      string
		size, ram uint64
		want      string
	}{
		{"exactly half", ram / 2, ram, "50%"},
		{"half, rounded to pages", ram/2 - 4096, ram, "50%"},
		{"a quarter", ram / 4, ram, "25%"},
		{"all of it", ram, ram, "100%"},
		{"absolute 64GiB", 64 * gib, ram, "64GiB"},
		{"half plus 16MiB", ram/2 + 16<<20, ram, spec.FormatBytes(ram/2 + 16<<20)},
		{"RAM unknown", 64 * gib, 0, "64GiB"},
		{"tiny RAM, 1.5 % is not whole", 1536 << 10, 100 << 20, "1536KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := shmSize(tc.size, tc.ram); got != tc.want {
				t.Errorf("shmSize(%d, %d) = %q, want %q", tc.size, tc.ram, got, tc.want)
			}
		})
	}
}

// TestSpecNoGPU: a host with nothing NVIDIA says so for every component
// instead of leaving the reader to guess whether import looked.
func TestSpecNoGPU(t *testing.T) {
	f := &facts.Node{MemoryBytes: 32 << 30, Shm: facts.Shm{Mounted: true, SizeBytes: 16 << 30}}
	got := string(Spec(f, Options{KB: testKB, Name: "cpu01", Host: spec.Host{Name: "cpu01"}, Now: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}))
	for _, want := range []string{
		"# hardware: no NVIDIA GPU found on the PCI bus (gpu_count 0)",
		"# no NVIDIA driver found",
		"# no CUDA toolkit found",
		"# no NCCL found",
		"# no DCGM found",
		"# no container runtime or NVIDIA Container Toolkit found",
		`size = "50%"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

// TestSpecUnknownGPU: GPUs the knowledge base cannot name are not written
// as a hardware object (it needs the model) but named in a comment.
func TestSpecUnknownGPU(t *testing.T) {
	f := &facts.Node{PCI: []facts.PCIDevice{{Address: "0000:01:00.0", Kind: facts.KindGPU, Vendor: facts.VendorNVIDIA, Device: "0xfffe", NUMANode: 0}}}
	got := string(Spec(f, Options{KB: testKB, Name: "n", Host: spec.Host{Name: "n"}, Now: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}))
	if !strings.Contains(got, "# hardware: 1 NVIDIA GPU found (1 × device 0xfffe)") || strings.Contains(got, "hardware = {") {
		t.Errorf("unknown GPU model:\n%s", got)
	}
}
