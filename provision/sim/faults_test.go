package sim_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/kmsg"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/smi"
)

func readRoot(t *testing.T, root, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFaultDescriptionFeedsEveryLayer: the degraded profile's three
// @faults lines become its sysfs, its simulated NVML's faults and its
// bench replays. The replays derived from the real captures must equal,
// byte for byte, the modelled files written by hand before the
// description existed (testdata/degraded-bench, ../bench/README.md):
// the derivation changes the faulted device's numbers and nothing else.
func TestFaultDescriptionFeedsEveryLayer(t *testing.T) {
	root, err := sim.Materialize("hgx-h100-degraded", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		"sys/bus/pci/devices/0000:c3:00.0/current_link_width": "8\n",
		"sys/bus/pci/devices/0000:c3:00.0/max_link_width":     "16\n",
		"sys/bus/pci/devices/0000:61:00.0/current_link_speed": "2.5 GT/s PCIe\n",
		"sys/bus/pci/devices/0000:61:00.0/current_link_width": "16\n",
		"sys/class/infiniband/mlx5_3/ports/1/rate":            "200 Gb/sec (4X HDR)\n",
		"sys/class/infiniband/mlx5_3/ports/1/state":           "4: ACTIVE\n",
		"sys/class/infiniband/mlx5_0/ports/1/rate":            "400 Gb/sec (4X NDR)\n",
		sim.NVMLFaultsFile: "pcie_idle@0000:61:00.0\npcie_x8@0000:c3:00.0\n",
		"sys/bus/pci/devices/0000:1b:00.0/current_link_width": "16\n",
		"sys/bus/pci/devices/0000:1b:00.0/current_link_speed": "32.0 GT/s PCIe\n",
	} {
		if got := readRoot(t, root, p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	for _, f := range []string{"nvbandwidth/host_to_device_memcpy_ce.txt", "nvbandwidth/device_to_host_memcpy_ce.txt", "ib_write_bw/report-mlx5_3.txt"} {
		want, err := os.ReadFile(filepath.Join("testdata", "degraded-bench", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), readRoot(t, root, sim.BenchDir+"/"+f)); diff != "" {
			t.Errorf("%s derived from the description (-hand-modelled +derived):\n%s", f, diff)
		}
	}
	// The healthy report is left for every other pair.
	if got := readRoot(t, root, sim.BenchDir+"/ib_write_bw/report.txt"); !strings.Contains(got, "392.34") {
		t.Errorf("report.txt changed:\n%s", got)
	}
}

// TestSlowNICReplays: the slow-NIC profile's one line slows mlx5_5 in sysfs
// and in its RDMA write replay alike (before the description, its bench
// replayed full NDR numbers for a port sysfs showed at HDR).
func TestSlowNICReplays(t *testing.T) {
	root, err := sim.Materialize("hgx-h100-slownic", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := readRoot(t, root, "sys/class/infiniband/mlx5_5/ports/1/rate"); got != "200 Gb/sec (4X HDR)\n" {
		t.Errorf("mlx5_5 rate %q", got)
	}
	if got := readRoot(t, root, sim.BenchDir+"/ib_write_bw/report-mlx5_5.txt"); !strings.Contains(got, "196.19             196.17") {
		t.Errorf("report-mlx5_5.txt not at half rate:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(sim.NVMLFaultsFile))); err == nil {
		t.Error("a NIC fault planted something in the GPU's NVML")
	}
}

func TestParseFaults(t *testing.T) {
	got, err := sim.ParseFaults([]byte(`# comment
gpu 0000:C3:00.0 width=8
gpu 0000:9d:00.0 off_bus xid=79
gpu 0000:61:00.0 idle
nic mlx5_5 state="1: DOWN" phys_state="2: Polling"
workload checkpoint=lost resume=from_zero
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []sim.DeviceFault{
		{Kind: "gpu", Device: "0000:c3:00.0", Width: 8},
		{Kind: "gpu", Device: "0000:9d:00.0", OffBus: true, XID: 79},
		{Kind: "gpu", Device: "0000:61:00.0", Idle: true},
		{Kind: "nic", Device: "mlx5_5", Port: map[string]string{"state": "1: DOWN", "phys_state": "2: Polling"}},
		{Kind: "workload", Workload: []string{"checkpoint=lost", "resume=from_zero"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got[2].Fault() || !got[0].Fault() || !got[3].Fault() {
		t.Error("an idle GPU is described, not at fault; the others are faults")
	}
	for _, bad := range []string{"gpu 1b width=8", "gpu 0000:c3:00.0 width=4", "gpu 0000:c3:00.0 melted", "nic mlx5_3", "nic mlx5_3 speed=1", "switch sw0 down", "nic ../x rate=1", "workload", "workload resume=later"} {
		if _, err := sim.ParseFaults([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestDownRailDerived: a rail described DOWN shows DOWN in sysfs, and the
// ib_write_bw stand-in refuses the port as perftest does, so bench cannot
// measure it. (No shipped profile has a dead rail; the description is
// applied here to a converged root.)
func TestDownRailDerived(t *testing.T) {
	tr, root := newNode(t, "hgx-h100-converged")
	f, err := sim.ParseFaults([]byte(`nic mlx5_5 state="1: DOWN" phys_state="2: Polling"`))
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.ApplyFaults(root, f); err != nil {
		t.Fatal(err)
	}
	if got := readRoot(t, root, "sys/class/infiniband/mlx5_5/ports/1/state"); got != "1: DOWN\n" {
		t.Errorf("state %q", got)
	}
	out := string(run(t, tr, "ib_write_bw -d mlx5_5 --report_gbits 2>&1; echo rc=$?").Stdout)
	if !strings.Contains(out, "Port number 1 state is Down") || strings.Contains(out, "rc=0") {
		t.Errorf("ib_write_bw on a DOWN rail:\n%s", out)
	}
}

// TestNVLinkDownDerived: no shipped profile has an NVLink down, so the
// line that describes one is applied here. The node's simulated NVML
// shows the link inactive and its nvidia-smi topo -m one bonded link fewer
// between that GPU and every peer (NV17 where a real HGX H100 prints NV18,
// smi/testdata/topo/topo-matrix-8xH100-nv18-no-nic-rhel-ai.txt), and
// verify fails the GPU by bus id on either path: nvml.nvlink through NVML,
// nvml.nvlink_pairs through nvidia-smi.
func TestNVLinkDownDerived(t *testing.T) {
	tr, root := newNode(t, "hgx-h100-converged")
	if err := sim.PlantFaults(root, []byte("gpu 0000:9d:00.0 nvlink_down")); err != nil {
		t.Fatal(err)
	}
	m, err := tr.NVMLMock()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(m.Faults, "nvlink_down@0000:9d:00.0") {
		t.Fatalf("simulated NVML faults %v", m.Faults)
	}

	rep, err := smi.Parse(run(t, tr, smi.Command).Stdout)
	if err != nil {
		t.Fatal(err)
	}
	top, err := smi.ParseTopo(run(t, tr, smi.TopoCommand).Stdout)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range top.GPUPairs {
		want := 18
		if p.A == 4 || p.B == 4 { // GPU 4 is 0000:9d:00.0
			want = 17
		}
		if p.NVLinks != want {
			t.Errorf("GPU%d–GPU%d: NV%d, want NV%d", p.A, p.B, p.NVLinks, want)
		}
	}
	top.Apply(rep)
	exp := verify.Expectation{KB: testKB, GPUCount: 8, NVLink: verify.NVLinkAllActive, Interconnect: verify.InterconnectNVSwitch}
	for _, r := range verify.Check(exp, rep, verify.HostFacts{}) {
		if !strings.HasPrefix(r.ID, "nvml.nvlink_pairs[") {
			continue
		}
		bad := r.ID == "nvml.nvlink_pairs[gpu4]"
		if bad != (r.Status == verify.StatusFail) || (bad && !strings.Contains(r.Message, "00000000:9D:00.0")) {
			t.Errorf("nvidia-smi path: %s %s %q", r.ID, r.Status, r.Message)
		}
	}

	nv, err := nvmlfacts.CollectAgent(context.Background(), nvmlfacts.AgentOptions{Mock: m.System, Faults: parseFaults(t, m.Faults)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range verify.Check(exp, nv, verify.HostFacts{}) {
		if !strings.HasPrefix(r.ID, "nvml.nvlink[") {
			continue
		}
		bad := r.ID == "nvml.nvlink[gpu4]"
		if bad != (r.Status == verify.StatusFail) || (bad && (r.GPU == nil || r.GPU.BusID != "00000000:9D:00.0")) {
			t.Errorf("NVML path: %s %s %q %+v", r.ID, r.Status, r.Message, r.GPU)
		}
	}
}

func parseFaults(t *testing.T, s []string) []nvmlfacts.Fault {
	t.Helper()
	var out []nvmlfacts.Fault
	for _, f := range s {
		p, err := nvmlfacts.ParseFault(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestKernelLogFaults: "kernel dmesg=restricted" makes dmesg fail as
// util-linux's does under kernel.dmesg_restrict, and "kernel
// dmesg=flood" makes it repeat the profile's Xid lines past the 64 MiB a
// command may write, so kmsg.Read reports the log unreadable in the one
// case and the transport stops the command in the other. No shipped
// profile has either; they are planted on the Xid 79 profile's root.
func TestKernelLogFaults(t *testing.T) {
	got, err := sim.ParseFaults([]byte("kernel dmesg=restricted\nkernel dmesg=flood\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Dmesg != sim.DmesgRestricted || got[1].Dmesg != sim.DmesgFlood || !got[0].Fault() {
		t.Errorf("parsed %+v", got)
	}
	for _, bad := range []string{"kernel", "kernel dmesg=slow", "kernel dmesg=flood xid=79", "kernel ring dmesg=flood"} {
		if _, err := sim.ParseFaults([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}

	tr, root := newNode(t, "hgx-h100-xid79")
	if err := sim.PlantFaults(root, []byte("kernel dmesg=restricted")); err != nil {
		t.Fatal(err)
	}
	lg, err := kmsg.Read(context.Background(), tr)
	if err != nil || lg.Unreadable != "dmesg: read kernel buffer failed: Operation not permitted" || len(lg.Events) != 0 {
		t.Errorf("restricted: %+v, %v", lg, err)
	}

	tr, root = newNode(t, "hgx-h100-xid79")
	if err := sim.PlantFaults(root, []byte("kernel dmesg=flood")); err != nil {
		t.Fatal(err)
	}
	var limit *transport.OutputLimitError
	if lg, err := kmsg.Read(context.Background(), tr); !errors.As(err, &limit) || limit.Stream != "stdout" {
		t.Errorf("flood: %v, want the stdout limit (read %d events, unreadable %.300q)", err, len(lg.Events), lg.Unreadable)
	}

	// A flood repeats Xid lines; a log without one has none to repeat.
	_, root = newNode(t, "hgx-h100-converged")
	if err := sim.PlantFaults(root, []byte("kernel dmesg=flood")); err == nil || !strings.Contains(err.Error(), "no Xid line") {
		t.Errorf("flood without Xid lines: %v", err)
	}
	if err := sim.PlantFaults(t.TempDir(), []byte("kernel dmesg=flood")); err == nil {
		t.Error("planted faults on a directory that is no simulated root")
	}
}

// TestRemapAndThermalDerived (issue 38's drills): "remap_pending" and
// "thermal_slowdown" on GPU 5 (0000:c3:00.0) reach its simulated NVML
// and its nvidia-smi -q -x alike, so verify fails nvml.row_remap[gpu5]
// and nvml.throttle[gpu5], and no other GPU's, on either path.
func TestRemapAndThermalDerived(t *testing.T) {
	got, err := sim.ParseFaults([]byte("gpu 0000:c3:00.0 remap_pending thermal_slowdown\n"))
	if err != nil || len(got) != 1 || !got[0].RemapPending || !got[0].ThermalSlowdown || !got[0].Fault() {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	tr, root := newNode(t, "hgx-h100-converged")
	if err := sim.PlantFaults(root, []byte("gpu 0000:c3:00.0 remap_pending thermal_slowdown")); err != nil {
		t.Fatal(err)
	}
	m, err := tr.NVMLMock()
	if err != nil {
		t.Fatal(err)
	}
	smiRep, err := smi.Parse(run(t, tr, smi.Command).Stdout)
	if err != nil {
		t.Fatal(err)
	}
	nv, err := nvmlfacts.CollectAgent(context.Background(), nvmlfacts.AgentOptions{Mock: m.System, Faults: parseFaults(t, m.Faults)})
	if err != nil {
		t.Fatal(err)
	}
	exp := verify.Expectation{KB: testKB, GPUCount: 8}
	for path, rep := range map[string]*nvmlfacts.Report{"NVML": nv, "nvidia-smi": smiRep} {
		failed := map[string]bool{}
		for _, r := range verify.Check(exp, rep, verify.HostFacts{}) {
			if r.Status == verify.StatusFail {
				failed[r.ID] = true
			}
		}
		for _, id := range []string{"nvml.row_remap[gpu5]", "nvml.throttle[gpu5]"} {
			if !failed[id] {
				t.Errorf("%s path: %s did not fail (failed: %v)", path, id, failed)
			}
		}
		for id := range failed {
			if id != "nvml.row_remap[gpu5]" && id != "nvml.throttle[gpu5]" {
				t.Errorf("%s path: %s failed too", path, id)
			}
		}
	}
}
