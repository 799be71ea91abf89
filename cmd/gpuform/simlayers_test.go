package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/graph"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/spec"
)

// profileModule is the built-in hardware module each simulated profile's
// hardware follows; a new profile must be added here, so none escapes the
// layer test.
func profileModule(profile string) (module string, gpuNIC bool) {
	switch {
	case strings.HasPrefix(profile, "hgx-h100"), profile == "no-driver":
		return "hgx-h100-8gpu", true
	case profile == "dgx-a100":
		return "dgx-a100", true
	case profile == "l40s-rocky9":
		return "l40s-8gpu-pcie", false
	case profile == "gh200":
		return "gh200", false
	case profile == "gb200-nvl72-tray":
		return "gb200-nvl72-tray", false
	case profile == "gb300-nvl72-tray":
		return "gb300-nvl72-tray", false
	}
	return "", false
}

// pendingNICChecks are the NIC faults of the shipped profiles that no
// verify check judges on this branch: nic.link[DEV] (port state, physical
// state, rate, link layer against the hardware block) and
// nic.pcie_link[DEV] come with the NIC per-rail checks of issue 27. Each
// is logged as pending; once verify declares the check (Checks()), the
// test requires it to fail naming the device, like every GPU fault. The
// list must equal what the layers show, so it cannot drift from them.
var pendingNICChecks = map[string][]string{
	// mlx5_3 up at 200 Gb/s (4X HDR) where the hardware declares 400.
	"hgx-h100-degraded": {"nic.link[mlx5_3]"},
	// mlx5_5, GPU 3's rail, up at 200 Gb/s.
	"hgx-h100-slownic": {"nic.link[mlx5_5]"},
}

// layerFault is one device that some layer of a simulated node shows at
// fault, with the verify check that must fail naming it and the layers
// that show it.
type layerFault struct {
	check  string // check id ("nvml.pcie_link") or, for NICs, id with device
	device string // PCI address of a GPU ("0000:c3:00.0"), name of a NIC
	seen   []string
}

type layerCheck struct {
	ID, Status, Observed, Message string
	GPU                           *struct {
		BusID string `json:"pci_bus_id"`
	}
}

// names reports whether a check result names the device: a GPU by its
// PCI address (in NVML's "00000000:C3:00.0", the kernel's "0000:c3:00"
// or sysfs's form), a NIC by its name in the check id.
func (c layerCheck) names(dev string) bool {
	if !strings.Contains(dev, ":") {
		return strings.Contains(c.ID, "["+dev+"]")
	}
	if c.GPU != nil {
		if b, err := nvmlfacts.NormalizeBusID(c.GPU.BusID); err == nil && b == dev {
			return true
		}
	}
	text := strings.ToLower(c.Observed + " " + c.Message)
	return strings.Contains(text, dev) || strings.Contains(text, "0000"+dev) ||
		strings.Contains(text, "pci:"+strings.TrimSuffix(dev, ".0"))
}

// TestSimProfileLayersAgree walks every simulated profile and collects the
// devices each layer shows at fault: the profile's fault description, the
// facts probe (GPU link width, the spec's rail NICs' port state and rate
// against the hardware block), graph's problems and bench's findings. For
// every one, verify must fail the check that judges it, naming the device
// (NIC checks not yet in verify are pending, see pendingNICChecks). And
// the other way: no nvml.pcie_link fails on a device no other layer
// shows, and a GPU the description says is idle (link at Gen1 to save
// power) is flagged by no layer at all. verify runs twice, through the
// node's simulated NVML and then, the root saying the NVML agent cannot
// run there (sim.NoNVMLAgentFile), through its nvidia-smi (-q -x, topo -m):
// both runs are held to the layers, and to each other (smiAgreesWithNVML).
func TestSimProfileLayersAgree(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("probes, verifies and benches every simulated profile")
	}
	for _, profile := range sim.Names() {
		t.Run(profile, func(t *testing.T) {
			t.Parallel()
			mod, gpuNIC := profileModule(profile)
			if mod == "" {
				t.Fatalf("profile %s has no hardware module in profileModule", profile)
			}
			dir := t.TempDir()
			affinity := ""
			if gpuNIC {
				affinity = "affinity {\n    gpu_nic = module.hw.gpu_nic\n  }"
			}
			writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), fmt.Sprintf(`
module "hw" {
  source = "gpuform/%s"
}
node "n" {
  hosts    = ["sim://%s"]
  hardware = module.hw.hardware
  %s
}
`, mod, profile, affinity))
			cfg, diags := spec.Load(dir, spec.LoadOptions{BuiltinModules: modules.FS()})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			decl := cfg.Nodes[0]
			env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}

			faults := map[string]*layerFault{}
			saw := func(check, dev, layer string) {
				k := check + " " + dev
				if faults[k] == nil {
					faults[k] = &layerFault{check: check, device: dev}
				}
				if !slices.Contains(faults[k].seen, layer) {
					faults[k].seen = append(faults[k].seen, layer)
				}
			}

			// The description.
			desc, err := sim.Faults(profile)
			if err != nil {
				t.Fatal(err)
			}
			idle := map[string]bool{}
			for _, f := range desc {
				switch {
				case f.Kind == "nic":
					saw("nic.link["+f.Device+"]", f.Device, "description")
				case f.Idle && !f.Fault():
					idle[f.Device] = true
				}
				if f.Kind == "gpu" && f.Width > 0 {
					saw("nvml.pcie_link", f.Device, "description")
				}
				if f.Kind == "gpu" && f.OffBus {
					saw("nvml.gpu_count", f.Device, "description")
				}
				if f.Kind == "gpu" && f.XID > 0 {
					saw("kernel.xid", f.Device, "description")
				}
				if f.Kind == "gpu" && f.NVLinkDown {
					saw("nvml.nvlink", f.Device, "description")
				}
			}

			// Facts.
			code, out, errOut := runCLIEnv(t, env, "facts", "-json", dir)
			if code != ExitOK {
				t.Fatalf("facts: exit %d\n%s", code, errOut)
			}
			var fdoc struct {
				Hosts []struct {
					Facts facts.Node `json:"facts"`
				} `json:"hosts"`
			}
			if err := json.Unmarshal([]byte(out), &fdoc); err != nil || len(fdoc.Hosts) != 1 {
				t.Fatalf("facts -json: %v\n%s", err, out)
			}
			node := &fdoc.Hosts[0].Facts
			gpus := node.NVIDIAGPUs()
			for _, g := range gpus {
				if w, mw := g.CurrentLinkWidth, g.MaxLinkWidth; w > 0 && mw > 0 && w < mw {
					saw("nvml.pcie_link", bus(t, g.Address), "facts")
				}
			}
			rails := map[string]int{} // the spec's rail NICs and their declared speed
			if decl.Affinity != nil {
				for _, n := range decl.Affinity.GPUNIC {
					if hn, ok := decl.Hardware.NIC(n.V); ok {
						rails[hn.Name] = hn.SpeedGbps
					}
				}
			}
			for _, d := range node.RDMA {
				want, rail := rails[d.Name]
				if !rail {
					continue // storage and management ports are not judged
				}
				for _, p := range d.Ports {
					rate, _ := strconv.ParseFloat(strings.Fields(p.Rate + " 0")[0], 64)
					if !strings.HasSuffix(p.State, "ACTIVE") || !strings.HasSuffix(p.PhysState, "LinkUp") || (want > 0 && rate < float64(want)) {
						saw("nic.link["+d.Name+"]", d.Name, "facts")
					}
				}
			}

			// graph.
			topo := graph.FromFacts(node, decl)
			for _, p := range topo.Problems {
				var box *graph.Box
				for i := range topo.Boxes {
					if topo.Boxes[i].ID == p.Box {
						box = &topo.Boxes[i]
					}
				}
				if box == nil {
					t.Fatalf("graph problem %q on no box", p.Text)
				}
				switch {
				case p.Kind == graph.ProblemLink && box.Kind == graph.KindGPU:
					saw("nvml.pcie_link", bus(t, box.Address), "graph")
				case p.Kind == graph.ProblemLink && box.Kind == graph.KindNIC:
					// Only the rails the spec names are judged; graph
					// reports the others (gh200's Ethernet port at x8).
					if _, rail := rails[box.Label]; rail {
						saw("nic.pcie_link["+box.Label+"]", box.Label, "graph")
					}
				case p.Kind == graph.ProblemMissing && box.Kind == graph.KindGPU:
					saw("nvml.gpu_count", bus(t, box.Detail[1]), "graph")
				}
			}

			// bench (the layers a device fault slows).
			code, out, errOut = runCLIEnv(t, env, "bench", "-json", "-layers", "host_gpu,network", dir)
			if code != ExitOK && code != ExitReport {
				t.Fatalf("bench: exit %d\n%s", code, errOut)
			}
			var bdoc struct {
				Hosts []struct {
					Bottleneck *struct {
						benchFinding
						Also []benchFinding `json:"also"`
					} `json:"bottleneck"`
				} `json:"hosts"`
			}
			if err := json.Unmarshal([]byte(out), &bdoc); err != nil || len(bdoc.Hosts) != 1 {
				t.Fatalf("bench -json: %v\n%s", err, out)
			}
			if b := bdoc.Hosts[0].Bottleneck; b != nil {
				for _, f := range append([]benchFinding{b.benchFinding}, b.Also...) {
					switch f.Layer {
					case "host_gpu":
						saw("nvml.pcie_link", f.gpuBus(t, gpus), "bench")
					case "network":
						saw("nic.link["+f.Device+"]", f.Device, "bench")
					}
				}
			}

			// verify, through the simulated NVML and then, as on a node
			// where the NVML agent cannot run, through nvidia-smi.
			state := strings.TrimPrefix(env[0], "GPUFORM_SIM_STATE=")
			nvmlChecks := verifyLayers(t, env, dir)
			judgeLayers(t, profile, "NVML", nvmlChecks, faults, idle)
			writeFile(t, filepath.Join(state, profile, filepath.FromSlash(sim.NoNVMLAgentFile)), "simulated node without the NVML agent\n")
			smiChecks := verifyLayers(t, env, dir)
			judgeLayers(t, profile, "nvidia-smi", smiChecks, faults, idle)
			smiAgreesWithNVML(t, nvmlChecks, smiChecks)
		})
	}
}

// verifyLayers runs verify -json on the one host of dir.
func verifyLayers(t *testing.T, env []string, dir string) []layerCheck {
	t.Helper()
	_, out, errOut := runCLIEnv(t, env, "verify", "-json", dir)
	var vdoc struct {
		Hosts []struct {
			Checks []layerCheck `json:"checks"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(out), &vdoc); err != nil || len(vdoc.Hosts) != 1 {
		t.Fatalf("verify -json: %v\n%s\n%s", err, out, errOut)
	}
	return vdoc.Hosts[0].Checks
}

// judgeLayers holds one verify run (path says which NVML source it read)
// to the faults the other layers show: each fails its check naming the
// device, no GPU link fails that no layer shows, and an idle GPU passes.
func judgeLayers(t *testing.T, profile, path string, checks []layerCheck, faults map[string]*layerFault, idle map[string]bool) {
	t.Helper()
	failing := func(check, dev string) (layerCheck, bool) {
		if check == "nvml.nvlink" && path == "nvidia-smi" {
			// nvidia-smi shows no per-link state; topo -m's NV# counts
			// judge the same expectation.
			check = "nvml.nvlink_pairs"
		}
		for _, c := range checks {
			base, _, _ := strings.Cut(c.ID, "[")
			if (c.ID == check || base == check) && c.Status == "fail" && c.names(dev) {
				return c, true
			}
		}
		return layerCheck{}, false
	}

	var pending []string
	for _, k := range sortedKeys(faults) {
		f := faults[k]
		if strings.HasPrefix(f.check, "nic.") {
			pending = append(pending, f.check)
			if known(strings.Split(f.check, "[")[0]) {
				if _, ok := failing(f.check, f.device); !ok {
					t.Errorf(path+": %s shown at fault by %s; verify does not fail %s", f.device, strings.Join(f.seen, ", "), f.check)
				}
				continue
			}
			t.Logf(path+": pending check %s: %s shown at fault by %s, which verify does not judge yet", f.check, f.device, strings.Join(f.seen, ", "))
			continue
		}
		if _, ok := failing(f.check, f.device); !ok {
			t.Errorf(path+": %s shown at fault by %s; verify does not fail %s naming it", f.device, strings.Join(f.seen, ", "), f.check)
		}
	}
	if diff := sortedDiff(pendingNICChecks[profile], pending); diff != "" {
		t.Errorf(path+": NIC faults the layers show differ from pendingNICChecks: %s", diff)
	}

	// The other way: verify fails no GPU link no other layer shows.
	for _, c := range checks {
		if !strings.HasPrefix(c.ID, "nvml.pcie_link[") || c.Status != "fail" {
			continue
		}
		found := false
		for _, f := range faults {
			found = found || (f.check == "nvml.pcie_link" && c.names(f.device))
		}
		if !found {
			t.Errorf(path+": verify fails %s (%s) on a link no other layer shows at fault", c.ID, c.Message)
		}
	}
	// An idle GPU is a fault on no layer; verify checked it and
	// passed it, saying it idles.
	for dev := range idle {
		for _, f := range faults {
			if f.device == dev {
				t.Errorf(path+": idle GPU %s is flagged by %s (%s)", dev, strings.Join(f.seen, ", "), f.check)
			}
		}
		judged := false
		for _, c := range checks {
			if strings.HasPrefix(c.ID, "nvml.pcie_link[") && c.names(dev) {
				judged = true
				if c.Status != "pass" || !strings.Contains(c.Observed, "idle at Gen1") {
					t.Errorf(path+": idle GPU %s: %s %s %q", dev, c.ID, c.Status, c.Observed)
				}
			}
		}
		if !judged && !strings.Contains(profile, "no-driver") {
			t.Errorf(path+": idle GPU %s: no nvml.pcie_link check judged it", dev)
		}
	}
}

type benchFinding struct {
	Layer   string `json:"layer"`
	Device  string `json:"device"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

var pciAddr = regexp.MustCompile(`[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]`)

// gpuBus is the PCI address of the GPU a bench finding is about: the one
// its fix names, else bench's "GPU N", the Nth NVIDIA GPU of the facts.
func (f benchFinding) gpuBus(t *testing.T, gpus []facts.PCIDevice) string {
	t.Helper()
	if a := pciAddr.FindString(strings.ToLower(f.Fix + " " + f.Message)); a != "" {
		return a
	}
	n, err := strconv.Atoi(strings.TrimPrefix(f.Device, "GPU "))
	if err != nil || n < 0 || n >= len(gpus) {
		t.Fatalf("bench finding on %q: not a GPU of the node", f.Device)
	}
	return bus(t, gpus[n].Address)
}

func bus(t *testing.T, addr string) string {
	t.Helper()
	b, err := nvmlfacts.NormalizeBusID(addr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// known reports whether verify declares a check of that id.
func known(id string) bool {
	for _, d := range verify.Checks() {
		if string(d.ID) == id {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

func sortedDiff(want, got []string) string {
	w, g := slices.Clone(want), slices.Clone(got)
	sort.Strings(w)
	sort.Strings(g)
	if slices.Equal(w, g) {
		return ""
	}
	return fmt.Sprintf("want %v, the layers show %v", w, g)
}

// smiAgreesWithNVML holds the nvidia-smi path to the NVML path on the same
// node: nvml.facts says it read nvidia-smi, every check both paths make
// has the same verdict, nvml.nvlink (blind to nvidia-smi) is a skip naming
// nvml.nvlink_pairs, which judges the NV# counts of topo -m and agrees
// with what nvml.nvlink said of the same GPU, and no check only one path
// makes is unaccounted for (nvml.xid listens to NVML events, which
// nvidia-smi does not report; kernel.xid reads them from the kernel log on
// both paths).
func smiAgreesWithNVML(t *testing.T, nvml, smiPath []layerCheck) {
	t.Helper()
	byID := map[string]layerCheck{}
	for _, c := range nvml {
		byID[c.ID] = c
	}
	seen := map[string]bool{}
	for _, c := range smiPath {
		seen[c.ID] = true
		base, gpu, _ := strings.Cut(c.ID, "[")
		n, both := byID[c.ID]
		switch base {
		case "nvml.facts":
			if c.Status == "pass" && !strings.Contains(c.Observed, "nvidia-smi") {
				t.Errorf("nvidia-smi path: nvml.facts read %q", c.Observed)
			}
			if c.Status != n.Status {
				t.Errorf("nvml.facts: %s through NVML, %s through nvidia-smi (%s)", n.Status, c.Status, c.Message)
			}
			continue
		case "nvml.nvlink":
			if c.Status != "skip" || !strings.Contains(c.Message, "nvml.nvlink_pairs") {
				t.Errorf("nvidia-smi path: %s %s %q, want a skip naming nvml.nvlink_pairs", c.ID, c.Status, c.Message)
			}
			continue
		case "nvml.nvlink_pairs":
			n, both = byID["nvml.nvlink["+gpu]
		case "nvml.fabric":
			// nvidia-smi -q -x is not read for the fabric: that path
			// cannot pass what it did not read.
			if c.Status != "error" || !both {
				t.Errorf("nvidia-smi path: %s %s %q, want an error beside the NVML path's verdict", c.ID, c.Status, c.Message)
			}
			continue
		}
		switch {
		case !both:
			t.Errorf("%s (%s %q) only on the nvidia-smi path", c.ID, c.Status, c.Message)
		case n.Status != c.Status:
			t.Errorf("%s: %s through NVML (%s), %s through nvidia-smi (%s)", c.ID, n.Status, n.Message, c.Status, c.Message)
		}
	}
	for _, c := range nvml {
		base, _, _ := strings.Cut(c.ID, "[")
		if !seen[c.ID] && base != "nvml.xid" {
			t.Errorf("%s (%s) only on the NVML path", c.ID, c.Status)
		}
	}
}
