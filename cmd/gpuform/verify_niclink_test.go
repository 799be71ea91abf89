package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/promtool"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/verify/report"
)

// railFault edits port 1 of an RDMA device of a materialised simulated
// root, as a bad cable or transceiver leaves it.
func railFault(t *testing.T, state, host, dev string, attrs map[string]string) {
	t.Helper()
	root, err := sim.MaterializeHost(host, state)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range attrs {
		p := filepath.Join(root, "sys/class/infiniband", dev, "ports/1", name)
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s has no %s: %v", host, p, err)
		}
		writeFile(t, p, v+"\n")
	}
}

// niclinkSpec is one node group of the given simulated hosts on the HGX
// H100 module (eight 400 Gb/s NDR compute rails), each GPU paired with its
// rail; the storage NICs mlx5_1/2 and mlx5_7/8 are named nowhere.
func niclinkSpec(t *testing.T, hosts ...string) string {
	t.Helper()
	quoted := make([]string, len(hosts))
	for i, h := range hosts {
		quoted[i] = fmt.Sprintf("%q", h)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "train" {
  hosts    = [`+strings.Join(quoted, ", ")+`]
  hardware = module.hgx.hardware
  affinity {
    gpu_nic = module.hgx.gpu_nic
  }
}
`)
	return dir
}

// A compute rail whose port is down, and one trained at 100 Gb/s EDR on
// 400 Gb/s NDR hardware, fail verify with nic.link naming the device, port
// and bus id; the shipped slow-NIC and degraded profiles fail it on their
// 200 Gb/s rails. The converged node, whose storage ports mlx5_2 and
// mlx5_8 are DOWN, passes every NIC check: they are reported in the JSON
// report's nics, not judged. Before nic.link no check looked at a port.
func TestVerifyNICLinkPerRail(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	const (
		healthy  = "sim://hgx-h100-converged/ok"
		down     = "sim://hgx-h100-converged/down"
		edr      = "sim://hgx-h100-converged/edr"
		slownic  = "sim://hgx-h100-slownic"
		degraded = "sim://hgx-h100-degraded"
	)
	railFault(t, state, down, "mlx5_0", map[string]string{"state": "1: DOWN", "phys_state": "2: Polling", "rate": "10 Gb/sec (4X SDR)"})
	railFault(t, state, edr, "mlx5_4", map[string]string{"rate": "100 Gb/sec (4X EDR)"})
	dir := niclinkSpec(t, healthy, down, edr, slownic, degraded)
	code, out, errOut := runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + state}, "verify", "-tier", "probe", "-allow-local", "-format", "json", dir)
	if code != ExitReport {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitReport, out, errOut)
	}
	var doc report.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	failing := map[string]map[string]string{} // host → failing nic.* check → message
	nics := map[string]int{}
	for _, h := range doc.Hosts {
		failing[h.Host] = map[string]string{}
		for _, c := range h.Checks {
			if strings.HasPrefix(c.ID, "nic.") && c.Status != "pass" {
				failing[h.Host][c.ID] = c.Message
			}
		}
		for _, p := range h.NICs {
			if p.Judged {
				nics[h.Host]++
			}
			if p.Device == "mlx5_2" && (p.Judged || p.State != "DOWN") {
				t.Errorf("%s: storage port %+v, want reported DOWN and not judged", h.Host, p)
			}
		}
	}
	want := map[string]map[string]string{
		healthy:  {},
		down:     {"nic.link[mlx5_0]": "mlx5_0 port 1 (00000000:18:00.0): port state DOWN, physical state Polling: no link partner"},
		edr:      {"nic.link[mlx5_4]": "mlx5_4 port 1 (00000000:4F:00.0): rate 100 Gb/sec (4X EDR), below the 400 Gb/s the hardware declares"},
		slownic:  {"nic.link[mlx5_5]": "mlx5_5 port 1 (00000000:5E:00.0): rate 200 Gb/sec (4X HDR), below the 400 Gb/s"},
		degraded: {"nic.link[mlx5_3]": "mlx5_3 port 1 (00000000:40:00.0): rate 200 Gb/sec (4X HDR), below the 400 Gb/s"},
	}
	for host, checks := range want {
		if len(failing[host]) != len(checks) {
			t.Errorf("%s: failing NIC checks %v, want %v", host, failing[host], checks)
		}
		for id, msg := range checks {
			if got, ok := failing[host][id]; !ok || !strings.Contains(got, msg) {
				t.Errorf("%s: %s = %q, want it failing with %q", host, id, got, msg)
			}
		}
		// Eight rails judged on every host: the module's eight compute NICs.
		if nics[host] != 8 {
			t.Errorf("%s: %d ports judged, want 8", host, nics[host])
		}
	}
	// Every rail of the healthy node passes both checks.
	for _, h := range doc.Hosts {
		if h.Host != healthy {
			continue
		}
		passed := 0
		for _, c := range h.Checks {
			if strings.HasPrefix(c.ID, "nic.link[") || strings.HasPrefix(c.ID, "nic.pcie_link[") {
				if c.Status == "pass" {
					passed++
				}
			}
		}
		if passed != 16 {
			t.Errorf("%s: %d NIC checks passed, want 16 (8 rails × nic.link, nic.pcie_link)", h.Host, passed)
		}
	}
}

// The same rails in Prometheus: one gpuform_nic_link_up per port, the
// DOWN rail and the unjudged storage port at 0, the EDR rail's rate
// beside its declared one; promtool accepts the file.
func TestVerifyNICLinkPrometheus(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	const down, edr = "sim://hgx-h100-converged/down", "sim://hgx-h100-converged/edr"
	railFault(t, state, down, "mlx5_0", map[string]string{"state": "1: DOWN", "phys_state": "2: Polling", "rate": "10 Gb/sec (4X SDR)"})
	railFault(t, state, edr, "mlx5_4", map[string]string{"rate": "100 Gb/sec (4X EDR)"})
	dir := niclinkSpec(t, down, edr)
	code, out, errOut := runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + state}, "verify", "-tier", "probe", "-allow-local", "-format", "prometheus", dir)
	if code != ExitReport {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitReport, out, errOut)
	}
	promtool.CheckMetrics(t, []byte(out))
	for _, line := range []string{
		`gpuform_nic_link_up{host="` + down + `",device="mlx5_0",port="1",judged="true"} 0`,
		`gpuform_nic_link_up{host="` + down + `",device="mlx5_3",port="1",judged="true"} 1`,
		`gpuform_nic_link_up{host="` + down + `",device="mlx5_2",port="1",judged="false"} 0`,
		`gpuform_nic_link_rate_bytes_per_second{host="` + edr + `",device="mlx5_4",port="1",judged="true"} 1.25e+10`,
		`gpuform_nic_link_declared_rate_bytes_per_second{host="` + edr + `",device="mlx5_4",port="1",judged="true"} 5e+10`,
		`gpuform_check_ok{host="` + down + `",check="nic.link[mlx5_0]"} 0`,
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("no line %s", line)
		}
	}
}

// -verbose text names the ports no rail uses that are down, as info: the
// converged node's DOWN storage ports, while verify's NIC checks pass.
func TestVerifyNICLinkVerboseListsUnjudgedPorts(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	dir := niclinkSpec(t, "sim://hgx-h100-converged")
	_, out, errOut := runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + state}, "verify", "-tier", "probe", "-verbose", dir)
	if !strings.Contains(out, "not judged (no rail of the spec): mlx5_2 port 1 DOWN (Disabled), mlx5_8 port 1 DOWN (Disabled)\n") {
		t.Errorf("no line for the unjudged ports:\n%s%s", out, errOut)
	}
	rails := 0
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], "nic.link[") {
			rails++
			if f[0] != "pass" {
				t.Errorf("a rail does not pass: %s", line)
			}
		}
	}
	if rails != 8 {
		t.Errorf("%d nic.link lines, want 8:\n%s", rails, out)
	}
}
