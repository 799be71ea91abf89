package verify

import (
	"context"
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
