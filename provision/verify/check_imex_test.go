package verify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/spec"
)

// TestIMEXPeers probes a simulated GB200 tray of an 18-tray rack whose
// IMEX node list the test writes, and judges imex.peers: the whole rack
// passes, a list without tray 07 fails naming it, one with a tray of
// another rack fails naming that, a stopped service fails, and a host in
// no domain is skipped. One root is probed for every case; the list is
// rewritten between probes.
func TestIMEXPeers(t *testing.T) {
	t.Parallel()
	var rack []string
	for i := 1; i <= 18; i++ {
		rack = append(rack, fmt.Sprintf("sim://gb200-nvl72-tray/r1-t%02d", i))
	}
	cfg, diags := spec.LoadFiles(map[string][]byte{"rack.gpuform.hcl": []byte(`
node "rack1" {
  hosts = ["sim://gb200-nvl72-tray/r1-t[01-18]", "sim://gb200-nvl72-tray/spare"]
  driver {
    version = "580.159.03"
    imex    = true
  }
  nvlink_domain "rack1" { hosts = ["sim://gb200-nvl72-tray/r1-t[01-18]"] }
}
`)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	exp := ExpectationFor(cfg.Nodes[0])
	root, err := sim.MaterializeHost(rack[4], t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	peers := func(drop int, add ...string) string {
		var lines []string
		for i := 1; i <= 18; i++ {
			if i != drop {
				lines = append(lines, fmt.Sprintf("r1-t%02d", i))
			}
		}
		return strings.Join(append(lines, add...), "\n") + "\n"
	}
	probe := func(t *testing.T, host, list string) *facts.Node {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, "etc/nvidia-imex/nodes_config.cfg"), []byte(list), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := facts.Probe(context.Background(), sim.New(host, root), facts.Options{Reads: resource.Reads()})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	type verdict struct {
		Status  Status
		Message string
	}
	tests := []struct {
		name, host, list string
		stop             bool
		want             verdict
	}{
		{"whole rack", rack[4], peers(0), false, verdict{StatusPass, ""}},
		{"lacks a peer", rack[4], peers(7), false, verdict{StatusFail, `IMEX lacks peer r1-t07 of NVLink domain "rack1"`}},
		{"another rack's tray", rack[4], peers(0, "r2-t01"), false, verdict{StatusFail, `IMEX lists r2-t01, not a host of NVLink domain "rack1"`}},
		{"service stopped", rack[4], peers(0), true, verdict{StatusFail, "nvidia-imex.service is inactive, not active (the node list is complete)"}},
		{"no domain", "sim://gb200-nvl72-tray/spare", peers(0), false, verdict{StatusSkip, "the host is in no nvlink_domain block: no peers to judge"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := filepath.Join(root, "run/systemd/units/invocation:nvidia-imex.service")
			if tt.stop {
				if err := os.Remove(inv); err != nil {
					t.Fatal(err)
				}
				defer func() {
					if err := os.Symlink("3e8f1c2a9b7d4e6f8a1b2c3d4e5f6a7b", inv); err != nil {
						t.Fatal(err)
					}
				}()
			}
			f := probe(t, tt.host, tt.list)
			rs := checkIMEX(exp, HostFacts{Facts: f})
			if len(rs) != 1 || rs[0].ID != "imex.peers" {
				t.Fatalf("results %+v", rs)
			}
			if d := cmp.Diff(tt.want, verdict{rs[0].Status, rs[0].Message}); d != "" {
				t.Errorf("(-want +got):\n%s\nobserved %q", d, rs[0].Observed)
			}
		})
	}
	if rs := checkIMEX(exp, HostFacts{}); len(rs) != 1 || rs[0].Status != StatusError {
		t.Errorf("without facts: %+v, want an error", rs)
	}
}

// TestConfirmIMEX: an imex.peers failure that rests on the service's state
// alone is overridden, both shown, by a multi-node NVLink all_reduce that
// passed on the host; not by a failed one, not by one over another
// network, and never when the node list lacks a peer.
func TestConfirmIMEX(t *testing.T) {
	t.Parallel()
	stale := CheckResult{ID: "imex.peers", Status: StatusFail, Message: "nvidia-imex.service is inactive, not active" + imexStatusOnly}
	lacking := CheckResult{ID: "imex.peers", Status: StatusFail, Message: `IMEX lacks peer r1-t07 of NVLink domain "rack1"`}
	measured := CheckResult{ID: "nccl.rack", Status: StatusPass, Observed: "busbw 843.00 GB/s at 16G"}
	mnnvl := Expectation{NCCL: []NCCLExpectation{{Name: "rack", MultiNode: true, Network: "mnnvl"}}}
	ib := Expectation{NCCL: []NCCLExpectation{{Name: "rack", MultiNode: true, Network: "ib_ndr"}}}
	failedRun := measured
	failedRun.Status = StatusFail
	type verdict struct {
		Status  Status
		Message string
	}
	for _, tt := range []struct {
		name string
		exp  Expectation
		out  []CheckResult
		want verdict
	}{
		{"stale status, fabric measured", mnnvl, []CheckResult{stale, measured}, verdict{StatusPass, "IMEX status says nvidia-imex.service is inactive, not active, but nccl.rack measured the fabric across the domain (busbw 843.00 GB/s at 16G): the status is stale, the fabric works; confirm IMEX's state on the node"}},
		{"run failed", mnnvl, []CheckResult{stale, failedRun}, verdict{StatusFail, stale.Message}},
		{"run over InfiniBand", ib, []CheckResult{stale, measured}, verdict{StatusFail, stale.Message}},
		{"peer missing", mnnvl, []CheckResult{lacking, measured}, verdict{StatusFail, lacking.Message}},
	} {
		out := append([]CheckResult(nil), tt.out...)
		confirmIMEX(tt.exp, out)
		if d := cmp.Diff(tt.want, verdict{out[0].Status, out[0].Message}); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, d)
		}
	}
}

// TestIMEXStatusOnTheSimulatedTray: with IMEX's own view read
// (facts.Options.IMEXStatus, the simulated nvidia-imex-ctl -N), a rack
// whose every peer is READY and connected passes; a peer the tray cannot
// reach fails naming its node number and its nodes_config line; a stopped
// service fails on both the unit and the unreadable status.
func TestIMEXStatusOnTheSimulatedTray(t *testing.T) {
	t.Parallel()
	cfg, diags := spec.LoadFiles(map[string][]byte{"rack.gpuform.hcl": []byte(`
node "rack1" {
  hosts = ["sim://gb200-nvl72-tray/r1-t[01-18]"]
  driver {
    version = "580.159.03"
    imex    = true
  }
  nvlink_domain "rack1" {}
}
`)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	exp := ExpectationFor(cfg.Nodes[0])
	host := "sim://gb200-nvl72-tray/r1-t05"
	root, err := sim.MaterializeHost(host, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := 1; i <= 18; i++ {
		lines = append(lines, fmt.Sprintf("r1-t%02d", i))
	}
	if err := os.WriteFile(filepath.Join(root, "etc/nvidia-imex/nodes_config.cfg"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unreachable := filepath.Join(root, "var/lib/gpuform-sim/imex-unreachable")
	inv := filepath.Join(root, "run/systemd/units/invocation:nvidia-imex.service")
	type verdict struct {
		Status  Status
		Message string
	}
	for _, tt := range []struct {
		name, down string
		stop       bool
		want       verdict
	}{
		{"every peer connected", "", false, verdict{StatusPass, ""}},
		{"a peer unreachable", "r1-t08\n", false, verdict{StatusFail, "IMEX reports node #7 (r1-t08) UNAVAILABLE, not READY; IMEX connectivity: node #0 (r1-t01) to node #7 (r1-t08) invalid (not reachable); node #1 (r1-t02) to node #7 (r1-t08) invalid (not reachable); node #2 (r1-t03) to node #7 (r1-t08) invalid (not reachable) and 32 more pairs; IMEX domain state DOWN, not UP (the node list is complete)"}},
		{"service stopped", "", true, verdict{StatusFail, "nvidia-imex.service is inactive, not active; IMEX's own status could not be read: nvidia-imex-ctl -N exited 1: Connection to the IMEX command service failed: nvidia-imex.service is not running (gpuform-sim) (the node list is complete)"}},
	} {
		// Sequential: the cases share the root.
		if err := os.WriteFile(unreachable, []byte(tt.down), 0o644); err != nil {
			t.Fatal(err)
		}
		if tt.stop {
			if err := os.Remove(inv); err != nil {
				t.Fatal(err)
			}
		}
		f, err := facts.Probe(context.Background(), sim.New(host, root), facts.Options{Reads: resource.Reads(), IMEXStatus: true})
		if err != nil {
			t.Fatal(err)
		}
		rs := checkIMEX(exp, HostFacts{Facts: f})
		if len(rs) != 1 {
			t.Fatalf("%s: %+v", tt.name, rs)
		}
		if d := cmp.Diff(tt.want, verdict{rs[0].Status, rs[0].Message}); d != "" {
			t.Errorf("%s (-want +got):\n%s\nobserved %q", tt.name, d, rs[0].Observed)
		}
	}
}

// TestIMEXStatusOnCaptures judges the published 18-node capture
// (provision/facts/testdata/imex) for a host whose nodes_config lists the
// capture's addresses: it passes; the same capture with one pair
// Disconnected (an edit: no degraded capture is published) fails naming
// both nodes, and a passed MNNVL all_reduce then overrides it, both shown.
func TestIMEXStatusOnCaptures(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../facts/testdata/imex/imex-ctl-N-p6e-gb200-18-nodes.txt")
	if err != nil {
		t.Fatal(err)
	}
	st, err := facts.ParseIMEXStatus(string(b))
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, n := range st.Nodes {
		addrs = append(addrs, n.Address)
	}
	if got := imexStatusProblems(st, addrs); len(got) != 0 {
		t.Errorf("published healthy domain: %v", got)
	}
	broken, err := facts.ParseIMEXStatus(strings.Replace(string(b), "       3        C   C   C   C   C   C   C   C   C   C   C   C   C   C   C   C   C   C", "       3        C   C   C   C   C   C   C   C   C   C   C   D   C   C   C   C   C   C", 1))
	if err != nil {
		t.Fatal(err)
	}
	got := imexStatusProblems(broken, addrs)
	want := []string{"IMEX connectivity: node #3 (172.31.49.228) to node #11 (172.31.54.183) disconnected"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("one pair disconnected (-want +got):\n%s", d)
	}
	out := []CheckResult{
		{ID: "imex.peers", Status: StatusFail, Message: strings.Join(got, "; ") + imexStatusOnly},
		{ID: "nccl.rack", Status: StatusPass, Observed: "busbw 843.00 GB/s at 16G"},
	}
	confirmIMEX(Expectation{NCCL: []NCCLExpectation{{Name: "rack", MultiNode: true, Network: "mnnvl"}}}, out)
	if out[0].Status != StatusPass || !strings.Contains(out[0].Message, "disconnected") || !strings.Contains(out[0].Message, "843.00 GB/s") {
		t.Errorf("confirm before fail: %+v", out[0])
	}
}
