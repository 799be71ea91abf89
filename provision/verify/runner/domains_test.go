package runner

import (
	"fmt"
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
		if len(h.Checks) != 1 || h.Checks[0].ID != "nvml.fabric_domain" {
			t.Fatalf("%s: %+v", h.Host, h.Checks)
		}
		got[h.Host] = verdict{h.Checks[0].Status, h.Checks[0].Message}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
