package spec_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/spec"
)

// TestNVLinkDomainDecodes reads nvlink_domain blocks (one with a host
// pattern, one taking the rest by list), driver { imex } and rollout {
// unit } into the node.
func TestNVLinkDomainDecodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := `
node "racks" {
  hosts = ["sim://gb200-nvl72-tray/r1-t[01-03]", "sim://gb200-nvl72-tray/r2-t[01-02]"]
  driver {
    version = "580.159.03"
    imex    = true
  }
  nvlink_domain "rack1" {
    hosts = ["sim://gb200-nvl72-tray/r1-t[01-03]"]
  }
  nvlink_domain "rack2" {
    hosts = ["sim://gb200-nvl72-tray/r2-t02", "sim://gb200-nvl72-tray/r2-t01"]
  }
  rollout {
    unit  = "nvlink_domain"
    batch = 1
  }
  firmware {
    gpu_vbios    = "97.00.0B.00.2F"
    nic_firmware = "28.43.2026"
    bios         = "1.3.5"
    bmc          = "25.06"
  }
}
node "one" {
  hosts = ["a", "b"]
  nvlink_domain "solo" {}
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.gpuform.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := load(t, dir, spec.LoadOptions{})
	type domain struct {
		Name     string
		Hosts    []string
		HostsSet bool
	}
	var got []domain
	for _, n := range cfg.Nodes {
		for _, d := range n.NVLinkDomains {
			got = append(got, domain{d.Name, d.Hosts, d.HostsSet})
		}
	}
	want := []domain{
		{"rack1", []string{"sim://gb200-nvl72-tray/r1-t01", "sim://gb200-nvl72-tray/r1-t02", "sim://gb200-nvl72-tray/r1-t03"}, true},
		// In the node's order, whatever order the block lists them in.
		{"rack2", []string{"sim://gb200-nvl72-tray/r2-t01", "sim://gb200-nvl72-tray/r2-t02"}, true},
		{"solo", []string{"a", "b"}, false},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("domains (-want +got):\n%s", d)
	}
	n := cfg.Nodes[0]
	if !n.Driver.IMEX.Set || !n.Driver.IMEX.V {
		t.Errorf("driver imex = %+v, want true", n.Driver.IMEX)
	}
	if n.Rollout.Unit.V != spec.RolloutUnitNVLinkDomain {
		t.Errorf("rollout unit = %q", n.Rollout.Unit.V)
	}
	if n.Firmware == nil || n.Firmware.GPUVBIOS.V != "97.00.0B.00.2F" || n.Firmware.NICFirmware.V != "28.43.2026" || n.Firmware.BIOS.V != "1.3.5" || n.Firmware.BMC.V != "25.06" {
		t.Errorf("firmware = %+v", n.Firmware)
	}
	if got := n.NVLinkDomainOf("sim://gb200-nvl72-tray/r2-t02"); got != "rack2" {
		t.Errorf("NVLinkDomainOf(r2-t02) = %q, want rack2", got)
	}
	if got := cfg.Nodes[1].NVLinkDomainOf("c"); got != "" {
		t.Errorf("NVLinkDomainOf(c) = %q, want none", got)
	}
}

// TestNVLinkDomainFromFabric: from = "fabric" marks a block whose domains
// plan reads from the nodes; any other word is an error at the value.
func TestNVLinkDomainFromFabric(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		from, err string
	}{
		{`"fabric"`, ""},
		{`"clique"`, `from takes "fabric"`},
		{`1`, `from takes "fabric"`},
	} {
		src := `
node "racks" {
  hosts = ["a", "b", "c"]
  nvlink_domain "nvl72" { from = ` + tt.from + ` }
}
`
		cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(src)}, spec.LoadOptions{})
		if tt.err != "" {
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tt.err) || diags[0].Subject == nil || diags[0].Subject.Start.Line != 4 {
				t.Errorf("from = %s: %v, want %q at line 4", tt.from, diags, tt.err)
			}
			continue
		}
		if diags.HasErrors() {
			t.Fatalf("from = %s: %v", tt.from, diags)
		}
		n := cfg.Nodes[0]
		if d := n.FabricDomainBlock("b"); d == nil || !d.FromFabric || len(d.Hosts) != 3 {
			t.Errorf("from = %s: block %+v", tt.from, d)
		}
	}
}
