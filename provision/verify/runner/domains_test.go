package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/spec"
)

// TestFabricDomain judges nvml.fabric_domain over an 18-tray GB200 rack
// from its hosts' NVML reports (no verify run: the runner's comparison is
// judged): 17 trays in one clique pass, the tray in another fails naming
// both cliques, a tray with no registration is an error.
func TestFabricDomain(t *testing.T) {
	t.Parallel()
	cfg, diags := spec.LoadFiles(map[string][]byte{"rack.gpuform.hcl": []byte(`
module "tray" { source = "gpuform/gb200-nvl72-tray" }
node "rack1" {
  hosts    = ["sim://gb200-nvl72-tray/t[01-18]"]
  hardware = module.tray.hardware
  nvlink_domain "rack1" {}
}
`)}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	targets, d := target.Select(cfg, nil)
	if d.HasErrors() {
		t.Fatal(d)
	}
	reg := func(clique uint32) *nvmlfacts.Report {
		f := nvmlfacts.Fabric{State: "Completed", Status: "Success", CliqueID: clique, ClusterUUID: "9c6f5af3-53bf-49b5-a436-b66766c413c3"}
		return &nvmlfacts.Report{GPUs: []nvmlfacts.GPU{{Index: 0, Fabric: &f}}}
	}
	var hosts []report.Host
	for i, tg := range targets {
		rep := reg(4026)
		switch i {
		case 6:
			rep = reg(4027)
		case 11:
			rep = &nvmlfacts.Report{GPUs: []nvmlfacts.GPU{{Index: 0}}}
		}
		hosts = append(hosts, report.Host{Host: tg.Host.Name, NVML: rep})
	}
	addDomainChecks(targets, hosts)
	type verdict struct {
		Status  verify.Status
		Message string
	}
	want := map[string]verdict{}
	got := map[string]verdict{}
	for i := range 18 {
		h := fmt.Sprintf("sim://gb200-nvl72-tray/t%02d", i+1)
		switch i {
		case 6:
			want[h] = verdict{verify.StatusFail, `in clique 4027 cluster 9c6f5af3-53bf-49b5-a436-b66766c413c3, not in the clique of the rest of NVLink domain "rack1" (clique 4026 cluster 9c6f5af3-53bf-49b5-a436-b66766c413c3 on 16): the tray is not in the domain's NVLink partition`}
		case 11:
			want[h] = verdict{verify.StatusError, "the host reports no fabric registration to compare (see nvml.fabric)"}
		default:
			want[h] = verdict{verify.StatusPass, ""}
		}
	}
	for _, h := range hosts {
		var c []verify.CheckResult
		for _, r := range h.Checks {
			if r.ID == "nvml.fabric_domain" {
				c = append(c, r)
			}
		}
		if len(c) != 1 {
			t.Fatalf("%s: %+v", h.Host, h.Checks)
		}
		got[h.Host] = verdict{c[0].Status, c[0].Message}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestFirmwareDrift: across a rack of 18 trays, the tray whose GPUs run
// another VBIOS than the other 17 fails naming both versions, a tray
// whose GPUs disagree among themselves is an error, the rest pass; a
// domain where no host reports a VBIOS is skipped, never passed.
func TestFirmwareDrift(t *testing.T) {
	t.Parallel()
	cfg, diags := spec.LoadFiles(map[string][]byte{"rack.gpuform.hcl": []byte(`
node "rack1" {
  hosts = ["t[01-18]"]
  nvlink_domain "rack1" {}
}
`)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	targets, d := target.Select(cfg, nil)
	if d.HasErrors() {
		t.Fatal(d)
	}
	gpus := func(vs ...string) *nvmlfacts.Report {
		rep := &nvmlfacts.Report{}
		for i, v := range vs {
			rep.GPUs = append(rep.GPUs, nvmlfacts.GPU{Index: i, VBIOS: v})
		}
		return rep
	}
	run := func(reps func(i int) *nvmlfacts.Report) map[string]verify.CheckResult {
		var hosts []report.Host
		for i, tg := range targets {
			hosts = append(hosts, report.Host{Host: tg.Host.Name, NVML: reps(i)})
		}
		addDomainChecks(targets, hosts)
		out := map[string]verify.CheckResult{}
		for _, h := range hosts {
			for _, c := range h.Checks {
				if c.ID == "firmware.domain_drift" {
					out[h.Host] = c
				}
			}
		}
		return out
	}
	got := run(func(i int) *nvmlfacts.Report {
		switch i {
		case 3:
			return gpus("97.00.0B.00.30", "97.00.0B.00.30", "97.00.0B.00.30", "97.00.0B.00.30")
		case 9:
			return gpus("97.00.0B.00.2F", "97.00.0B.00.30", "97.00.0B.00.2F", "97.00.0B.00.2F")
		}
		return gpus("97.00.0B.00.2F", "97.00.0B.00.2F", "97.00.0B.00.2F", "97.00.0B.00.2F")
	})
	type verdict struct {
		Status  verify.Status
		Message string
	}
	for i := range 18 {
		h := fmt.Sprintf("t%02d", i+1)
		want := verdict{verify.StatusPass, ""}
		switch i {
		case 3:
			want = verdict{verify.StatusFail, `GPU VBIOS 97.00.0B.00.30 drifts from the rest of NVLink domain "rack1" (97.00.0B.00.2F on 16)`}
		case 9:
			want = verdict{verify.StatusError, "the host's GPUs report no VBIOS version, or differ among themselves (see nvml.vbios)"}
		}
		if d := cmp.Diff(want, verdict{got[h].Status, got[h].Message}); d != "" {
			t.Errorf("%s (-want +got):\n%s", h, d)
		}
	}
	none := run(func(int) *nvmlfacts.Report { return gpus("", "") })
	if c := none["t01"]; c.Status != verify.StatusSkip {
		t.Errorf("no VBIOS anywhere: %+v, want a skip", c)
	}
}

// TestFirmwareDriftNICAndBIOS judges firmware.domain_drift for the NICs'
// firmware, the BIOS and the BMC over an 18-tray rack: tray 05's NICs run
// an older firmware, tray 12 a newer BIOS, tray 16's NICs disagree among
// themselves, tray 08's BMC runs another revision and tray 09's BMC was
// not read; each kind gets its own result, and a kind no tray reports
// gets none.
func TestFirmwareDriftNICAndBIOS(t *testing.T) {
	t.Parallel()
	cfg, diags := spec.LoadFiles(map[string][]byte{"rack.gpuform.hcl": []byte(`
node "rack1" {
  hosts = ["t[01-18]"]
  nvlink_domain "rack1" {}
}
`)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	targets, d := target.Select(cfg, nil)
	if d.HasErrors() {
		t.Fatal(d)
	}
	var hosts []report.Host
	for i, tg := range targets {
		fw := &verify.Firmware{NIC: "28.43.2026", NICSeen: true, BIOS: "1.3.5", BMC: "25.06"}
		switch i {
		case 4:
			fw.NIC = "28.42.1000"
		case 11:
			fw.BIOS = "1.4.0"
		case 15:
			fw.NIC = ""
		case 7:
			fw.BMC = "24.09"
		case 8:
			fw.BMC = ""
		}
		hosts = append(hosts, report.Host{Host: tg.Host.Name, Firmware: fw})
	}
	addDomainChecks(targets, hosts)
	type verdict struct {
		Observed string
		Status   verify.Status
		Message  string
	}
	got := map[string][]verdict{}
	for _, h := range hosts {
		for _, c := range h.Checks {
			if c.ID == "firmware.domain_drift" && !strings.HasPrefix(c.Observed, "GPU VBIOS") {
				got[h.Host] = append(got[h.Host], verdict{c.Observed, c.Status, c.Message})
			}
		}
	}
	for i := range 18 {
		h := fmt.Sprintf("t%02d", i+1)
		nic := verdict{"NIC firmware 28.43.2026", verify.StatusPass, ""}
		bios := verdict{"BIOS 1.3.5", verify.StatusPass, ""}
		bmc := verdict{"BMC firmware 25.06", verify.StatusPass, ""}
		switch i {
		case 4:
			nic = verdict{"NIC firmware 28.42.1000", verify.StatusFail, `NIC firmware 28.42.1000 drifts from the rest of NVLink domain "rack1" (28.43.2026 on 16)`}
		case 11:
			bios = verdict{"BIOS 1.4.0", verify.StatusFail, `BIOS 1.4.0 drifts from the rest of NVLink domain "rack1" (1.3.5 on 17)`}
		case 15:
			nic = verdict{"NIC firmware none", verify.StatusError, "the host's RDMA adapters report no firmware version, or differ among themselves (see nic.firmware)"}
		case 7:
			bmc = verdict{"BMC firmware 24.09", verify.StatusFail, `BMC firmware 24.09 drifts from the rest of NVLink domain "rack1" (25.06 on 16)`}
		case 8:
			bmc = verdict{"BMC firmware none", verify.StatusError, "the host's BMC was not read (no ipmitool or /dev/ipmi0, or ipmitool mc info failed; see host.bmc)"}
		}
		if d := cmp.Diff([]verdict{nic, bios, bmc}, got[h]); d != "" {
			t.Errorf("%s (-want +got):\n%s", h, d)
		}
	}
	// No host reports NIC firmware or a BIOS: only the VBIOS result (a skip).
	bare := []report.Host{}
	for _, tg := range targets {
		bare = append(bare, report.Host{Host: tg.Host.Name})
	}
	addDomainChecks(targets, bare)
	if n := len(bare[0].Checks); n != 1 || bare[0].Checks[0].Status != verify.StatusSkip {
		t.Errorf("no firmware reported anywhere: %+v, want one VBIOS skip", bare[0].Checks)
	}
}

// TestFabricDomainReadFromFabric: a block read from the fabric (from =
// "fabric") over two racks' trays is two domains, each the clique its
// trays report, so every tray with a registration passes
// nvml.fabric_domain; a tray with none is an error, in no domain.
func TestFabricDomainReadFromFabric(t *testing.T) {
	t.Parallel()
	cfg, diags := spec.LoadFiles(map[string][]byte{"racks.gpuform.hcl": []byte(`
module "tray" { source = "gpuform/gb200-nvl72-tray" }
node "racks" {
  hosts    = ["sim://gb200-nvl72-tray/t[01-36]"]
  hardware = module.tray.hardware
  nvlink_domain "nvl72" { from = "fabric" }
}
`)}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	targets, d := target.Select(cfg, nil)
	if d.HasErrors() {
		t.Fatal(d)
	}
	var hosts []report.Host
	for i, tg := range targets {
		f := nvmlfacts.Fabric{State: "Completed", Status: "Success", CliqueID: uint32(4026 + i/18), ClusterUUID: "9c6f5af3-53bf-49b5-a436-b66766c413c3"}
		if i == 20 {
			f = nvmlfacts.Fabric{State: "Not Started", Status: "NVML error 999", ClusterUUID: "00000000-0000-0000-0000-000000000000"}
		}
		hosts = append(hosts, report.Host{Host: tg.Host.Name, NVML: &nvmlfacts.Report{GPUs: []nvmlfacts.GPU{{Index: 0, Fabric: &f}}}})
	}
	addDomainChecks(targets, hosts)
	for i, h := range hosts {
		var c []verify.CheckResult
		for _, r := range h.Checks {
			if r.ID == "nvml.fabric_domain" {
				c = append(c, r)
			}
		}
		want := verify.StatusPass
		if i == 20 {
			want = verify.StatusError
		}
		if len(c) != 1 || c[0].Status != want {
			t.Errorf("%s: %+v, want one nvml.fabric_domain %s", h.Host, c, want)
		}
	}
}
