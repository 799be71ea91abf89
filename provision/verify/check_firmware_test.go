package verify

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/spec"
)

// TestNICFirmwareAndBIOSPins judges firmware { nic_firmware, bios } on
// probed simulated trays: the GB200 tray's four ConnectX-7 run one
// firmware; the GB300 tray's mlx5_3 runs an older one than its other
// three rails (provision/sim/roots/README.md), and is named.
func TestNICFirmwareAndBIOSPins(t *testing.T) {
	t.Parallel()
	probe := func(host string) *facts.Node {
		root, err := sim.MaterializeHost(host, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		f, err := facts.Probe(context.Background(), sim.New(host, root), facts.Options{Reads: resource.Reads()})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	gb200, gb300 := probe("sim://gb200-nvl72-tray/t1"), probe("sim://gb300-nvl72-tray/t1")
	cfg, diags := spec.LoadFiles(map[string][]byte{"t.gpuform.hcl": []byte(`
node "tray" {
  hosts = ["t1"]
  firmware {
    nic_firmware = "28.43.2026"
    bios         = "1.3.5"
  }
}
`)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	pinned := ExpectationFor(cfg.Nodes[0])
	if pinned.NICFirmware != "28.43.2026" || pinned.BIOS != "1.3.5" {
		t.Fatalf("ExpectationFor: nic_firmware %q, bios %q", pinned.NICFirmware, pinned.BIOS)
	}
	type verdict struct {
		ID       string
		Status   Status
		Observed string
		Message  string
	}
	for _, tt := range []struct {
		name string
		exp  Expectation
		f    *facts.Node
		want []verdict
	}{
		{"gb200 matches", pinned, gb200, []verdict{
			{"nic.firmware", StatusPass, "28.43.2026 (mlx5_0,mlx5_1,mlx5_2,mlx5_3)", ""},
			{"host.bios", StatusPass, "1.3.5", ""},
		}},
		{"gb300 odd rail named", Expectation{NICFirmware: "40.45.1200"}, gb300, []verdict{
			{"nic.firmware", StatusFail, "40.45.1200 (mlx5_0,mlx5_1,mlx5_2); 40.44.1036 (mlx5_3)", "mlx5_3 runs firmware 40.44.1036, the spec pins 40.45.1200"},
		}},
		{"gb200 other pins", Expectation{NICFirmware: "28.42.1000", BIOS: "1.4.0"}, gb200, []verdict{
			{"nic.firmware", StatusFail, "28.43.2026 (mlx5_0,mlx5_1,mlx5_2,mlx5_3)", "mlx5_0, mlx5_1, mlx5_2, mlx5_3 run firmware 28.43.2026, the spec pins 28.42.1000"},
			{"host.bios", StatusFail, "1.3.5", "the host runs BIOS 1.3.5, the spec pins 1.4.0"},
		}},
		{"no facts", Expectation{NICFirmware: "28.43.2026", BIOS: "1.3.5"}, nil, []verdict{
			{"nic.firmware", StatusError, "", "no probe facts to read the NICs' firmware from"},
			{"host.bios", StatusError, "", "no probe facts to read the BIOS version from"},
		}},
		{"nothing reported", Expectation{NICFirmware: "28.43.2026", BIOS: "1.3.5"}, &facts.Node{RDMA: []facts.RDMADevice{{Name: "mlx5_0"}}}, []verdict{
			{"nic.firmware", StatusError, "", "no firmware version reported for mlx5_0"},
			{"host.bios", StatusError, "", "the host reports no BIOS version (/sys/class/dmi/id/bios_version)"},
		}},
		{"no pins", Expectation{}, gb300, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []verdict
			for _, r := range append(checkNICFirmware(tt.exp, tt.f), checkBIOS(tt.exp, tt.f)...) {
				got = append(got, verdict{r.ID, r.Status, r.Observed, r.Message})
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("verdicts (-want +got):\n%s", d)
			}
		})
	}
}

// TestBMCPin judges firmware { bmc } on probed simulated GB200 trays
// whose ipmitool stand-in answers mc info: the tray's modelled 25.06
// passes; a tray rewritten to another revision fails naming both; a tray
// without /dev/ipmi0 (the BMC not read) and one whose ipmitool fails are
// errors, never passes.
func TestBMCPin(t *testing.T) {
	t.Parallel()
	probe := func(edit func(root string)) *facts.Node {
		root, err := sim.MaterializeHost("sim://gb200-nvl72-tray/t1", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		edit(root)
		f, err := facts.Probe(context.Background(), sim.New("sim://gb200-nvl72-tray/t1", root), facts.Options{Reads: resource.Reads()})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	write := func(rel, text string) func(string) {
		return func(root string) {
			if err := os.WriteFile(filepath.Join(root, rel), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	type verdict struct {
		Status   Status
		Observed string
		Message  string
	}
	exp := Expectation{BMC: "25.06"}
	for _, tt := range []struct {
		name string
		edit func(root string)
		want verdict
	}{
		{"modelled revision", func(string) {}, verdict{StatusPass, "25.06", ""}},
		{"another BMC", write("var/lib/gpuform-sim/bmc-firmware-revision", "24.09\n"), verdict{StatusFail, "24.09", "the host's BMC runs firmware 24.09, the spec pins 25.06"}},
		{"no /dev/ipmi0", func(root string) {
			if err := os.Remove(filepath.Join(root, "dev/ipmi0")); err != nil {
				t.Fatal(err)
			}
		}, verdict{StatusError, "", "the BMC was not read: the node has no ipmitool or no /dev/ipmi0, so the pin cannot be verified"}},
		{"ipmitool fails", func(root string) {
			if err := os.Remove(filepath.Join(root, "var/lib/gpuform-sim/bmc-firmware-revision")); err != nil {
				t.Fatal(err)
			}
		}, verdict{StatusError, "", "the BMC was not read: ipmitool mc info exited 1: Could not open device at /dev/ipmi0 or /dev/ipmi/0 or /dev/ipmidev/0: No such file or directory"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := probe(tt.edit)
			var got []verdict
			for _, r := range checkBMC(exp, f) {
				got = append(got, verdict{r.Status, r.Observed, r.Message})
			}
			if d := cmp.Diff([]verdict{tt.want}, got); d != "" {
				t.Errorf("host.bmc (-want +got):\n%s", d)
			}
			if fw := FirmwareOf(f); fw.BMC != tt.want.Observed {
				t.Errorf("FirmwareOf(...).BMC = %q, want %q", fw.BMC, tt.want.Observed)
			}
		})
	}
	if r := checkBMC(exp, nil); len(r) != 1 || r[0].Status != StatusError {
		t.Errorf("no facts: %+v, want one error", r)
	}
	if r := checkBMC(Expectation{}, probe(func(string) {})); r != nil {
		t.Errorf("no pin: %+v, want no result", r)
	}
}
