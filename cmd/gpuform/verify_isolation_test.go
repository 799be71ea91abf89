package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/verify/report"
)

// fleetSpec writes a spec of one node group of 8 simulated HGX H100
// hosts, n1…n8, the given instances on hgx-h100-slownic (one NIC at
// 200 Gb/s), the others converged; its multi-node all_reduce names no
// hosts, so verify runs it on the group's. The simulated nodes have no
// DCGM, which -tier fleet (from quick on) would fail.
func fleetSpec(t *testing.T, isolation string, slow ...int) string {
	return fleetSpecFloor(t, isolation, 120, "", slow...)
}

// fleetSpecFloor is fleetSpec with the group's floor and verify's
// outliers setting ("" leaves it unset).
func fleetSpecFloor(t *testing.T, isolation string, floor int, outliers string, slow ...int) string {
	t.Helper()
	var hosts []string
	for i := 1; i <= 8; i++ {
		profile := "hgx-h100-converged"
		for _, s := range slow {
			if s == i {
				profile = "hgx-h100-slownic"
			}
		}
		hosts = append(hosts, fmt.Sprintf("%q", fmt.Sprintf("sim://%s/n%d", profile, i)))
	}
	mode := ""
	if isolation != "" {
		mode = fmt.Sprintf("    isolation = %q\n", isolation)
	}
	if outliers != "" {
		mode += fmt.Sprintf("    outliers = %q\n", outliers)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "train" {
  hosts    = [`+strings.Join(hosts, ", ")+`]
  hardware = module.hgx.hardware
  verify {
    optional = ["dcgm"]
`+mode+`    nccl_test "fleet64" {
      command        = "mpirun -np 64 all_reduce_perf -b 8M -e 8G -f 2 -g 1"
      min_busbw_gbps = `+fmt.Sprint(floor)+`
    }
  }
}
`)
	return dir
}

// fleetVerify runs verify -tier fleet -format json and returns the
// document and each host's nccl_isolation.fleet64 status.
func fleetVerify(t *testing.T, dir string) (report.Document, map[string]string) {
	t.Helper()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	_, out, errOut := runCLIEnv(t, env, "verify", "-tier", "fleet", "-allow-local", "-format", "json", dir)
	var doc report.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	status := map[string]string{}
	for _, h := range doc.Hosts {
		for _, c := range h.Checks {
			if c.ID == "nccl_isolation.fleet64" {
				status[h.Host] = string(c.Status)
			}
		}
	}
	return doc, status
}

// A group of 8 with one hgx-h100-slownic node: the 8-node run is below
// its floor, and verify -tier fleet runs pairs, re-pairs the failing
// pair's nodes with nodes of passing pairs and names exactly the slow-NIC
// node, within the tier's budget; the pair matrix is in the JSON and the
// text report.
func TestVerifyFleetIsolationNamesSlowNIC(t *testing.T) {
	t.Parallel()
	dir := fleetSpec(t, "", 4)
	doc, status := fleetVerify(t, dir)
	if len(doc.Isolation) != 1 {
		t.Fatalf("%d isolation sections, want 1: %+v", len(doc.Isolation), doc.Isolation)
	}
	iso := doc.Isolation[0]
	if !iso.Complete || len(iso.Culprits) != 1 || iso.Culprits[0].Host != "sim://hgx-h100-slownic/n4" {
		t.Fatalf("isolation: complete %v (%s), culprits %+v\npairs %+v", iso.Complete, iso.Incomplete, iso.Culprits, iso.Pairs)
	}
	if iso.Duration <= 0 || iso.Duration > iso.Budget || iso.Budget.Minutes() != 45 {
		t.Errorf("isolation took %s of a %s budget", iso.Duration, iso.Budget)
	}
	if !strings.Contains(iso.Trigger, "the 8-node run failed") || !strings.Contains(iso.Trigger, "77.78") {
		t.Errorf("trigger %q", iso.Trigger)
	}
	// Round 1: four neighbour pairs, one failing; round 2: n3 and n4
	// each with a node of a passing pair. Every pair of n4 fails at the
	// modelled half rate against the 2-node floor; every other passes.
	if len(iso.Pairs) != 6 {
		t.Errorf("%d pairs, want 6: %+v", len(iso.Pairs), iso.Pairs)
	}
	for _, p := range iso.Pairs {
		withSlow := strings.Contains(p.Hosts[0]+p.Hosts[1], "slownic")
		if !p.Ran || p.Pass == withSlow || p.Floor != 120 || (withSlow && p.BusBW != 77.78) || (!withSlow && p.BusBW != 155.56) {
			t.Errorf("pair %+v", p)
		}
	}
	for host, s := range status {
		want := "pass"
		if host == "sim://hgx-h100-slownic/n4" {
			want = "fail"
		}
		if s != want {
			t.Errorf("%s: nccl_isolation.fleet64 %s, want %s", host, s, want)
		}
	}
	if len(status) != 8 {
		t.Errorf("nccl_isolation on %d hosts, want 8", len(status))
	}

	_, text, _ := runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "verify", "-tier", "fleet", "-allow-local", dir)
	for _, want := range []string{
		`Pairwise isolation of node "train", nccl_test "fleet64"`,
		"round  pair",
		"sim://hgx-h100-converged/n3 + sim://hgx-h100-slownic/n4",
		"77.78      120.00  FAIL",
		"Bad node: sim://hgx-h100-slownic/n4: failed with every partner",
		"6 pair(s) in 2 round(s)",
		"nccl_isolation.fleet64  failed with sim://hgx-h100-converged/n3 (77.78 GB/s), sim://hgx-h100-converged/n2 (77.78 GB/s)",
		"pairwise isolation names sim://hgx-h100-slownic/n4",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
}

// All-healthy groups name none: on_failure runs no pairs after a passing
// run, and always (acceptance) runs them and names nobody.
func TestVerifyFleetIsolationHealthy(t *testing.T) {
	t.Parallel()
	doc, status := fleetVerify(t, fleetSpec(t, ""))
	if len(doc.Isolation) != 0 || len(status) != 0 {
		t.Errorf("on_failure after a passing run: isolation %+v, checks %v", doc.Isolation, status)
	}
	doc, status = fleetVerify(t, fleetSpec(t, "always"))
	if len(doc.Isolation) != 1 {
		t.Fatalf("always: %d isolation sections", len(doc.Isolation))
	}
	iso := doc.Isolation[0]
	if !iso.Complete || len(iso.Culprits) != 0 || len(iso.Stragglers) != 0 || len(iso.Pairs) != 4 {
		t.Errorf("always, healthy: complete %v (%s), culprits %+v, stragglers %+v, %d pairs", iso.Complete, iso.Incomplete, iso.Culprits, iso.Stragglers, len(iso.Pairs))
	}
	for host, s := range status {
		if s != "pass" {
			t.Errorf("%s: nccl_isolation.fleet64 %s", host, s)
		}
	}
	if !doc.OK() || len(doc.Outliers) != 0 {
		t.Errorf("a healthy fleet: ok %v, outliers %+v", doc.OK(), doc.Outliers)
	}
	// off: nothing, even when the run fails.
	doc, status = fleetVerify(t, fleetSpec(t, "off", 4))
	if len(doc.Isolation) != 0 || len(status) != 0 || doc.OK() {
		t.Errorf("off: isolation %+v, checks %v, ok %v", doc.Isolation, status, doc.OK())
	}
}

// A slow node that still passes the floor: the group run passes, so only
// isolation = "always" (acceptance) pairs the nodes, and the slow-NIC node
// is named a straggler — slow with every partner, each of which is fast
// with another node — as a warning; with outliers = "fail" it fails.
func TestVerifyFleetStraggler(t *testing.T) {
	t.Parallel()
	doc, status := fleetVerify(t, fleetSpecFloor(t, "always", 60, "", 4))
	if len(doc.Isolation) != 1 {
		t.Fatalf("%d isolation sections", len(doc.Isolation))
	}
	iso := doc.Isolation[0]
	if !iso.Complete || len(iso.Culprits) != 0 || len(iso.Stragglers) != 1 || iso.Stragglers[0].Host != "sim://hgx-h100-slownic/n4" || iso.Stragglers[0].Pairs != 2 {
		t.Fatalf("complete %v (%s), culprits %+v, stragglers %+v\npairs %+v", iso.Complete, iso.Incomplete, iso.Culprits, iso.Stragglers, iso.Pairs)
	}
	if !doc.OK() || status["sim://hgx-h100-slownic/n4"] != "pass" {
		t.Errorf("a straggler warns by default: ok %v, n4 %s", doc.OK(), status["sim://hgx-h100-slownic/n4"])
	}
	_, text, _ := runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "verify", "-tier", "fleet", "-allow-local", fleetSpecFloor(t, "always", 60, "fail", 4))
	for _, want := range []string{
		"Straggler: sim://hgx-h100-slownic/n4: slow with all 2 partners (best pair 77.78 GB/s, median of the pairs 155.56 GB/s)",
		"FAIL   nccl_isolation.fleet64  straggler: slow with every partner",
		"pass, slow",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
}
