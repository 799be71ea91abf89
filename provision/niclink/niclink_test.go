package niclink

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]string{"4: ACTIVE": "ACTIVE", "1: DOWN": "DOWN", "2: INIT": "INIT", "Active": "ACTIVE",
		"Down": "DOWN", "PORT_ACTIVE (4)": "ACTIVE", "PORT_DOWN (1)": "DOWN", "": ""} {
		if got := ParseState(in); got != want {
			t.Errorf("ParseState(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"5: LinkUp": "LinkUp", "2: Polling": "Polling", "3: Disabled": "Disabled", "LinkUp": "LinkUp",
		"7: Phy Test": "Phy Test", "4: PortConfigurationTraining": "PortConfigurationTraining", "": ""} {
		if got := ParsePhysState(in); got != want {
			t.Errorf("ParsePhysState(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]float64{"400 Gb/sec (4X NDR)": 400, "200 Gb/sec (2X NDR)": 200, "2.5 Gb/sec (1X SDR)": 2.5,
		"10 Gb/sec (4X)": 10, "400": 400, "": 0, "unknown": 0, "-5 Gb/sec": 0} {
		if got := ParseRate(in); got != want {
			t.Errorf("ParseRate(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestJudge(t *testing.T) {
	ndr := Want{LinkLayer: LayerInfiniBand, RateGbps: 400}
	up := Port{Port: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: 400, Rate: "400 Gb/sec (4X NDR)", LinkLayer: LayerInfiniBand}
	with := func(f func(*Port)) Port { p := up; f(&p); return p }
	for _, tc := range []struct {
		name string
		p    Port
		w    Want
		want []string // fragments, one per fault
	}{
		{"healthy", up, ndr, nil},
		{"faster than declared", with(func(p *Port) { p.RateGbps, p.Rate = 800, "800 Gb/sec (4X XDR)" }), ndr, nil},
		{"nothing declared", with(func(p *Port) { p.RateGbps, p.LinkLayer = 100, LayerEthernet }), Want{}, nil},
		{"down, no cable", with(func(p *Port) { p.State, p.PhysState, p.RateGbps = "DOWN", "Polling", 10 }), ndr,
			[]string{"port state DOWN, physical state Polling: no link partner (reseat or replace the cable or transceiver; check that the switch port is enabled)"}},
		{"down, disabled", with(func(p *Port) { p.State, p.PhysState = "DOWN", "Disabled" }), ndr, []string{"`mlxlink -d mlx5_0`"}},
		{"training", with(func(p *Port) { p.State, p.PhysState = "DOWN", "PortConfigurationTraining" }), ndr, []string{"physical state PortConfigurationTraining, not LinkUp"}},
		{"no subnet manager", with(func(p *Port) { p.State = "INIT" }), ndr, []string{"port state INIT with the link up: the subnet manager has not activated the port"}},
		{"armed", with(func(p *Port) { p.State = "ARMED" }), ndr, []string{"port state ARMED with the link up"}},
		{"EDR on NDR", with(func(p *Port) { p.RateGbps, p.Rate = 100, "100 Gb/sec (4X EDR)" }), ndr,
			[]string{"rate 100 Gb/sec (4X EDR), below the 400 Gb/s the hardware declares: a degraded cable or transceiver"}},
		{"HDR on NDR", with(func(p *Port) { p.RateGbps, p.Rate = 200, "200 Gb/sec (4X HDR)" }), ndr, []string{"rate 200 Gb/sec (4X HDR), below the 400 Gb/s"}},
		{"rate unreadable", with(func(p *Port) { p.RateGbps, p.Rate = 0, "" }), ndr, []string{"rate unreadable"}},
		{"Ethernet on an InfiniBand rail", with(func(p *Port) { p.LinkLayer = LayerEthernet }), ndr, []string{"link layer Ethernet, the hardware declares InfiniBand"}},
		{"InfiniBand on a RoCE rail", up, Want{LinkLayer: LayerEthernet, RateGbps: 400}, []string{"link layer InfiniBand, the hardware declares Ethernet"}},
		// A port that is down reports its slowest rate: the rate is not a
		// second fault.
		{"down at SDR", with(func(p *Port) { p.State, p.PhysState, p.RateGbps, p.Rate = "DOWN", "Polling", 10, "10 Gb/sec (4X SDR)" }), ndr, []string{"Polling"}},
		{"nothing readable", Port{Port: 1}, ndr, []string{"port state unreadable, physical state unreadable", "link layer unknown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Judge("mlx5_0", tc.p, tc.w)
			if len(got) != len(tc.want) {
				t.Fatalf("faults %q, want %d like %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("fault %d %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func loadNode(t *testing.T, src string) *spec.Node {
	t.Helper()
	cfg, diags := spec.LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(src)}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return cfg.Nodes[0]
}

func TestRails(t *testing.T) {
	have := []string{"mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11", "mlx5_2", "mlx5_3"}
	for _, tc := range []struct {
		name, affinity string
		want           []Rail
	}{
		{"none", ``, nil},
		{"gpu_nic", `gpu_nic = { 0 = "mlx5_0", 1 = "mlx5_3", 2 = "mlx5_0" }`, []Rail{
			{Device: "mlx5_0", Ports: []int{1}, Named: []string{"affinity.gpu_nic (GPU 0)", "affinity.gpu_nic (GPU 2)"}},
			{Device: "mlx5_3", Ports: []int{1}, Named: []string{"affinity.gpu_nic (GPU 1)"}}}},
		{"mtu", `mtu = { mlx5_3 = 4092 }`, []Rail{{Device: "mlx5_3", Ports: []int{1}, Named: []string{"affinity.mtu"}}}},
		// NCCL reads a name as a prefix: mlx5_1 selects mlx5_10 and mlx5_11 too.
		{"nccl prefix", `nccl_ib_hca = ["mlx5_1"]`, []Rail{
			{Device: "mlx5_1", Ports: []int{1}, Named: []string{"affinity.nccl_ib_hca"}},
			{Device: "mlx5_10", Ports: []int{1}, Named: []string{"affinity.nccl_ib_hca"}},
			{Device: "mlx5_11", Ports: []int{1}, Named: []string{"affinity.nccl_ib_hca"}}}},
		{"nccl exact with ports", `nccl_ib_hca = ["=mlx5_1:1", "mlx5_1:2"]`, []Rail{
			{Device: "mlx5_1", Ports: []int{1, 2}, Named: []string{"affinity.nccl_ib_hca"}}}},
		// "^" excludes: NCCL uses every other device.
		{"nccl exclude", `nccl_ib_hca = ["^mlx5_1", "mlx5_2"]`, []Rail{
			{Device: "mlx5_0", Ports: []int{1}, Named: []string{"affinity.nccl_ib_hca"}},
			{Device: "mlx5_3", Ports: []int{1}, Named: []string{"affinity.nccl_ib_hca"}}}},
		// A listed device the host lacks is a rail too, judged absent.
		{"nccl names a missing device", `nccl_ib_hca = ["=mlx5_7"]`, []Rail{{Device: "mlx5_7", Ports: []int{1}, Named: []string{"affinity.nccl_ib_hca"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			block := ""
			if tc.affinity != "" {
				block = "affinity {\n" + tc.affinity + "\n}"
			}
			got := Rails(loadNode(t, "node \"n\" {\nhosts = [\"h\"]\n"+block+"\n}"), have)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rails (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWantOf(t *testing.T) {
	n := loadNode(t, `
module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
  nic_link = "roce"
  nic_speed_gbps = 200
}
node "n" {
  hosts    = ["h"]
  hardware = module.hgx.hardware
}`)
	if got := WantOf(n.Hardware, "mlx5_3"); got != (Want{LinkLayer: LayerEthernet, RateGbps: 200}) {
		t.Errorf("mlx5_3: %+v", got)
	}
	if got := WantOf(n.Hardware, "mlx5_1"); got.Declared() {
		t.Errorf("storage NIC mlx5_1 is not in the module: %+v", got)
	}
	if got := WantOf(nil, "mlx5_0"); got.Declared() {
		t.Errorf("no hardware: %+v", got)
	}
}

// capturedPort is one port of a published capture.
type capturedPort struct {
	Device string
	Port   Port
}

// readCapture reads an ibstatus or ibstat capture into ports, the way the
// facts probe's sysfs strings are read: ibstatus prints the sysfs files as
// they are; ibstat names the same facts in its own words. Test-only:
// gpuform runs neither tool.
func readCapture(t *testing.T, name string) []capturedPort {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []capturedPort
	var dev string
	cur := func() *Port { return &out[len(out)-1].Port }
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, val, _ := strings.Cut(line, ":")
		val = strings.TrimSpace(val)
		switch {
		case strings.HasPrefix(line, "Infiniband device '"): // ibstatus
			rest := strings.TrimPrefix(line, "Infiniband device '")
			d, p, _ := strings.Cut(rest, "' port ")
			n, _ := strconv.Atoi(strings.Fields(p)[0])
			out = append(out, capturedPort{Device: d, Port: Port{Port: n}})
		case strings.HasPrefix(line, "CA '"): // ibstat
			dev = strings.TrimSuffix(strings.TrimPrefix(line, "CA '"), "'")
		case strings.HasPrefix(line, "Port ") && strings.HasSuffix(line, ":"):
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, "Port "), ":"))
			out = append(out, capturedPort{Device: dev, Port: Port{Port: n}})
		case len(out) == 0:
		case key == "state" || key == "State":
			cur().State = ParseState(val)
		case key == "phys state" || key == "Physical state":
			cur().PhysState = ParsePhysState(val)
		case key == "rate" || key == "Rate":
			cur().Rate, cur().RateGbps = val, ParseRate(val)
		case key == "link_layer" || key == "Link layer":
			cur().LinkLayer = normLayer(val)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCaptures reads every published capture (testdata/README.md) to its
// true values and judges each port against a rail declared as the
// capture's own context says the hardware is; every capture is listed.
func TestCaptures(t *testing.T) {
	hdr := Want{LinkLayer: LayerInfiniBand, RateGbps: 200}
	ndr := Want{LinkLayer: LayerInfiniBand, RateGbps: 400}
	type port struct {
		dev                string
		n                  int
		state, phys, layer string
		rate               float64
		want               Want
		faults             int
		fault              string // a fragment of the first fault
		alsoAgainst        *Want  // a second declaration, and
		alsoFaults         int    // the faults it gives
	}
	eth100 := Want{LinkLayer: LayerEthernet, RateGbps: 100}
	for name, ports := range map[string][]port{
		"ibstatus-nccl489-hdr-active-and-disabled.txt": {
			{dev: "mlx5_0", n: 1, state: "ACTIVE", phys: "LinkUp", layer: "InfiniBand", rate: 200, want: hdr},
			{dev: "mlx5_1", n: 1, state: "DOWN", phys: "Disabled", layer: "InfiniBand", rate: 10, want: hdr, faults: 1, fault: "port state DOWN, physical state Disabled"},
		},
		"ibstatus-nccl1412-hdr-active.txt": {
			{dev: "mlx5_0", n: 1, state: "ACTIVE", phys: "LinkUp", layer: "InfiniBand", rate: 200, want: hdr},
			{dev: "mlx5_1", n: 1, state: "ACTIVE", phys: "LinkUp", layer: "InfiniBand", rate: 200, want: hdr},
			// On a 400 Gb/s NDR rail the same HDR port is too slow.
			{dev: "mlx5_2", n: 1, state: "ACTIVE", phys: "LinkUp", layer: "InfiniBand", rate: 200, want: hdr, alsoAgainst: &ndr, alsoFaults: 1},
		},
		"ibstatus-nccl1866-roce-100g-active.txt": {
			{dev: "mlx5_0", n: 1, state: "ACTIVE", phys: "LinkUp", layer: "Ethernet", rate: 100, want: eth100},
			// Declared InfiniBand NDR: the wrong link layer and too slow.
			{dev: "mlx5_1", n: 1, state: "ACTIVE", phys: "LinkUp", layer: "Ethernet", rate: 100, want: eth100, alsoAgainst: &ndr, alsoFaults: 2},
		},
		"ibstat-gpud482-cx7-down-polling.txt": {
			{dev: "mlx5_10", n: 1, state: "DOWN", phys: "Polling", layer: "InfiniBand", rate: 10, want: ndr, faults: 1, fault: "no link partner"},
		},
		"ibstat-gpud752-active-200-then-ibpanic.txt": {
			{dev: "mlx5_7", n: 1, state: "ACTIVE", phys: "LinkUp", layer: "InfiniBand", rate: 200, want: hdr, alsoAgainst: &ndr, alsoFaults: 1},
		},
		"ibstat-gpud99-down-disabled.txt": {
			{dev: "mlx5_8", n: 1, state: "DOWN", phys: "Disabled", want: ndr, faults: 2, fault: "physical state Disabled"},
		},
		"ibstat-deepep303-cx7-ndr-active.txt": {
			{dev: "mlx5_0", n: 1, state: "ACTIVE", phys: "LinkUp", layer: "InfiniBand", rate: 400, want: ndr},
			{dev: "mlx5_1", n: 1, state: "ACTIVE", phys: "LinkUp", layer: "InfiniBand", rate: 400, want: ndr},
		},
		"ibstat-rdmacore847-mlx4-port1-disabled-port2-fdr.txt": {
			{dev: "mlx4_0", n: 1, state: "DOWN", phys: "Disabled", layer: "InfiniBand", rate: 10, want: Want{LinkLayer: LayerInfiniBand, RateGbps: 56}, faults: 1, fault: "Disabled"},
			{dev: "mlx4_0", n: 2, state: "ACTIVE", phys: "LinkUp", rate: 56, want: Want{RateGbps: 56}},
		},
		"ibstat-l2fwdnv6-cx6dx-ethernet-100.txt": {
			{dev: "mlx5_0", n: 1, state: "ACTIVE", phys: "LinkUp", layer: "Ethernet", rate: 100, want: eth100},
			{dev: "mlx5_1", n: 1, state: "ACTIVE", phys: "LinkUp", layer: "Ethernet", rate: 100, want: eth100},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := readCapture(t, name)
			if len(got) != len(ports) {
				t.Fatalf("%d ports read, want %d: %+v", len(got), len(ports), got)
			}
			for i, w := range ports {
				g := got[i]
				if g.Device != w.dev || g.Port.Port != w.n || g.Port.State != w.state || g.Port.PhysState != w.phys || g.Port.LinkLayer != w.layer || g.Port.RateGbps != w.rate {
					t.Errorf("port %d read as %s %+v, want %s port %d %s %s %v %s", i, g.Device, g.Port, w.dev, w.n, w.state, w.phys, w.rate, w.layer)
				}
				faults := Judge(g.Device, g.Port, w.want)
				if len(faults) != w.faults || (w.fault != "" && !strings.Contains(faults[0], w.fault)) {
					t.Errorf("%s port %d against %s: faults %q, want %d with %q", g.Device, g.Port.Port, w.want, faults, w.faults, w.fault)
				}
				if w.alsoAgainst != nil {
					if faults := Judge(g.Device, g.Port, *w.alsoAgainst); len(faults) != w.alsoFaults {
						t.Errorf("%s port %d against %s: faults %q, want %d", g.Device, g.Port.Port, *w.alsoAgainst, faults, w.alsoFaults)
					}
				}
			}
		})
	}
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".txt") {
			listed++
		}
	}
	if listed != 9 {
		t.Errorf("%d captures in testdata, the table judges 9: add the new one", listed)
	}
}

// FromFacts reads the strings the probe records from sysfs exactly as the
// captures' ibstatus lines show them.
func TestFromFacts(t *testing.T) {
	got := FromFacts(facts.RDMAPort{Port: 1, LinkLayer: "InfiniBand", Rate: "200 Gb/sec (4X HDR)", State: "4: ACTIVE", PhysState: "5: LinkUp"})
	want := Port{Port: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: 200, Rate: "200 Gb/sec (4X HDR)", LinkLayer: LayerInfiniBand}
	if got != want {
		t.Errorf("FromFacts = %+v, want %+v", got, want)
	}
}
