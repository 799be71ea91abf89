package facts_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/facts"
)

func goldenNode(t *testing.T, name string) *facts.Node {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var n facts.Node
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

// fleet32 is a fleet of 32 hosts with mixed results: 20 converged H100
// nodes, 2 L40S nodes, 1 stale H100 node, 8 hosts refusing SSH with the
// same error and 1 with its own.
func fleet32(t *testing.T) []facts.HostFacts {
	conv, l40s, stale := goldenNode(t, "hgx-h100-converged"), goldenNode(t, "l40s-rocky9"), goldenNode(t, "hgx-h100-stale")
	var hosts []facts.HostFacts
	for i := 1; i <= 32; i++ {
		h := facts.HostFacts{Host: fmt.Sprintf("gpu%03d", i), Node: "fleet"}
		switch {
		case i <= 20:
			h.Facts = conv
		case i <= 22:
			h.Facts = l40s
		case i == 23:
			h.Facts = stale
		case i <= 31:
			h.Error = "connect: dial tcp 10.0.0.1:22: connect: connection refused"
		default:
			h.Error = "connect: ssh: handshake failed: ssh: unable to authenticate"
		}
		hosts = append(hosts, h)
	}
	return hosts
}

// TestRenderTextFleet: 32 hosts print one table row and one listing per
// distinct result, hosts folded; nine unreachable hosts print their two
// errors once each.
func TestRenderTextFleet(t *testing.T) {
	var buf bytes.Buffer
	facts.RenderText(&buf, fleet32(t))
	got := buf.String()
	golden := filepath.Join("testdata", "fleet-32.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("fleet text differs from %s (-want +got):\n%s", golden, diff)
	}
	if n := strings.Count(got, "connection refused"); n != 1 {
		t.Errorf("the shared error is printed %d times, want once:\n%s", n, got)
	}
	for _, h := range []string{"gpu[001-020]", "gpu[021-022]", "gpu023", "gpu[024-031]", "gpu032"} {
		if !strings.Contains(got, h) {
			t.Errorf("no folded host %q in:\n%s", h, got)
		}
	}
	if lines := strings.Count(got, "\n"); lines > 80 {
		t.Errorf("%d lines for 32 hosts with 5 distinct results", lines)
	}
}

// TestBMCDisplayIsNotAGPU: the ASPEED BMC VGA of the simulated H100 and
// L40S boards (class 0x0300, vendor 0x1a03) is a display, not a ninth GPU,
// and the node's own host name and machine id are read.
func TestBMCDisplayIsNotAGPU(t *testing.T) {
	for name, gpus := range map[string]int{"hgx-h100-converged": 8, "l40s-rocky9": 8, "dgx-a100": 8} {
		n := goldenNode(t, name)
		if got := len(n.GPUs()); got != gpus {
			t.Errorf("%s: %d GPUs, want %d", name, got, gpus)
		}
		for _, d := range n.GPUs() {
			if d.Vendor != facts.VendorNVIDIA {
				t.Errorf("%s: %s (vendor %s) counted as a GPU", name, d.Address, d.Vendor)
			}
		}
		if d := n.Displays(); len(d) != 1 || d[0].Vendor != "0x1a03" {
			t.Errorf("%s: displays %+v, want the ASPEED BMC VGA", name, d)
		}
		if n.Hostname == "" || len(n.MachineID) != 32 {
			t.Errorf("%s: hostname %q, machine id %q", name, n.Hostname, n.MachineID)
		}
	}
}
