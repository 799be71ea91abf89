package nicirq

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
)

func host() *facts.Node {
	return &facts.Node{
		NUMA: []facts.NUMANode{{ID: 0, CPUs: "0-3"}, {ID: 1, CPUs: "4-7"}},
		PCI: []facts.PCIDevice{
			{Address: "0000:9a:00.0", NUMANode: 1, RDMADevs: []string{"mlx5_6"}, IRQs: []facts.IRQ{{Number: 40, CPUs: "0-7"}, {Number: 41, CPUs: "4-7"}}},
			{Address: "0000:18:00.0", NUMANode: 0, RDMADevs: []string{"mlx5_0"}, IRQs: []facts.IRQ{{Number: 30, CPUs: "0-3"}}},
			// Not an RDMA NIC: left alone.
			{Address: "0000:1b:00.0", NUMANode: 0, Kind: facts.KindGPU},
			// The platform does not say where it is.
			{Address: "0000:29:00.0", NUMANode: -1, RDMADevs: []string{"mlx5_1"}},
		},
	}
}

func TestGroups(t *testing.T) {
	gs, warnings := Groups(host())
	if len(gs) != 2 || gs[0].Address != "0000:18:00.0" || gs[1].CPUs != "4-7" {
		t.Fatalf("groups %+v", gs)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "mlx5_1 (0000:29:00.0): the platform reports no NUMA node") {
		t.Errorf("warnings %q", warnings)
	}
	for _, tc := range []struct {
		name         string
		g            Group
		summary      string
		pinned       bool
		outside, bad int
	}{
		{name: "pinned", g: gs[0], summary: "1 IRQs: 1 on 0-3", pinned: true},
		{name: "one IRQ on every CPU", g: gs[1], summary: "2 IRQs: 1 on 0-7, 1 on 4-7", outside: 1},
		// A subset of the node is within it, but not what gpuform sets.
		{name: "subset", g: Group{CPUs: "4-7", IRQs: []facts.IRQ{{Number: 1, CPUs: "5"}}}, summary: "1 IRQs: 1 on 5"},
		{name: "unreadable", g: Group{CPUs: "4-7", IRQs: []facts.IRQ{{Number: 1}}}, summary: "1 IRQs: 1 on unreadable", outside: 1},
		{name: "no IRQs", g: Group{CPUs: "4-7"}, summary: "no IRQs", pinned: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summary(tc.g.IRQs); got != tc.summary {
				t.Errorf("Summary %q, want %q", got, tc.summary)
			}
			if tc.g.Pinned() != tc.pinned || len(tc.g.Outside()) != tc.outside {
				t.Errorf("Pinned %v Outside %q", tc.g.Pinned(), tc.g.Outside())
			}
		})
	}
}

// TestScriptRuns runs the rendered script with sh under a root: pin mode
// writes every IRQ of each NIC, found through msi_irqs, and irqbalance's
// policy mode bans exactly the NICs' IRQs.
func TestScriptRuns(t *testing.T) {
	gs, _ := Groups(host())
	script, err := Script("# test\n", gs)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for dev, irqs := range map[string][]string{"0000:18:00.0": {"30"}, "0000:9a:00.0": {"40", "41"}} {
		for _, n := range irqs {
			mustWrite(t, filepath.Join(root, "sys/bus/pci/devices", dev, "msi_irqs", n), "msix\n")
			mustWrite(t, filepath.Join(root, "proc/irq", n, "smp_affinity_list"), "0-7\n")
		}
	}
	file := filepath.Join(root, "nic-irq.sh")
	mustWrite(t, file, script)
	if out, err := exec.Command("sh", file, "pin", root).CombinedOutput(); err != nil {
		t.Fatalf("pin: %v\n%s", err, out)
	}
	for n, want := range map[string]string{"30": "0-3", "40": "4-7", "41": "4-7"} {
		if b, _ := os.ReadFile(filepath.Join(root, "proc/irq", n, "smp_affinity_list")); strings.TrimSpace(string(b)) != want {
			t.Errorf("IRQ %s: %q, want %s", n, b, want)
		}
	}
	for dev, want := range map[string]string{"/sys/devices/pci0000:97/0000:9a:00.0": "ban=true\n", "/sys/devices/pci0000:15/0000:1b:00.0": ""} {
		out, err := exec.Command("sh", file, dev, "40").Output()
		if err != nil || string(out) != want {
			t.Errorf("policy for %s: %q %v, want %q", dev, out, err, want)
		}
	}
	// An IRQ the kernel refuses to move (a directory stands in for a
	// managed IRQ's read-only file) fails the run, naming it.
	if err := os.Remove(filepath.Join(root, "proc/irq/41/smp_affinity_list")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "proc/irq/41/smp_affinity_list"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", file, "pin", root).CombinedOutput(); err == nil || !strings.Contains(string(out), "IRQ 41 of 0000:9a:00.0 cannot be moved to CPUs 4-7") {
		t.Errorf("refused IRQ: %v\n%s", err, out)
	}
}

func TestScriptRefusesHostileValues(t *testing.T) {
	for _, g := range []Group{
		{Address: "0000:18:00.0;reboot", Names: []string{"mlx5_0"}, CPUs: "0-3"},
		{Address: "0000:18:00.0", Names: []string{"mlx5_0"}, CPUs: "0-3\nreboot"},
		{Address: "0000:18:00.0", Names: []string{"mlx5 0"}, CPUs: "0-3"},
	} {
		if _, err := Script("", []Group{g}); err == nil {
			t.Errorf("%+v: rendered", g)
		}
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
