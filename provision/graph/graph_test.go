package graph

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/spec"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current pictures")

// factsRoot reads the facts the facts tests keep for a simulated profile
// (TestProbeSimRoots holds them equal to what the real probe reads).
func factsRoot(t *testing.T, name string) *facts.Node {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "facts", "testdata", "golden", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var n facts.Node
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

// loadNode loads a spec from testdata/specs/NAME and returns its only node.
func loadNode(t *testing.T, name string) *spec.Node {
	t.Helper()
	cfg, diags := spec.Load(filepath.Join("testdata", "specs", name), spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if len(cfg.Nodes) != 1 {
		t.Fatalf("spec %s has %d nodes, want 1", name, len(cfg.Nodes))
	}
	return cfg.Nodes[0]
}

// golden compares got with testdata/golden/name, or rewrites it.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

// render writes text, DOT and SVG of one picture, checks them against
// their golden files, has Graphviz parse and lay out the DOT, and checks
// that the SVG fits a 1600 × 1000 screen with no text under 11 px and no
// two texts overlapping.
func render(t *testing.T, name string, p Picture) (text, dot string) {
	t.Helper()
	var tb, db bytes.Buffer
	if err := WriteText(&tb, []Picture{p}); err != nil {
		t.Fatal(err)
	}
	if err := WriteDOT(&db, []Picture{p}); err != nil {
		t.Fatal(err)
	}
	golden(t, name+".txt", tb.Bytes())
	golden(t, name+".dot", db.Bytes())
	renders(t, db.Bytes())
	var sb bytes.Buffer
	if err := WriteSVG(&sb, []Picture{p}); err != nil {
		t.Fatal(err)
	}
	golden(t, name+".svg", sb.Bytes())
	checkPictures(t, sb.Bytes())
	return tb.String(), db.String()
}

// renders fails unless Graphviz's dot lays the DOT out as SVG without a
// warning; scripts/test.sh installs graphviz, so CI never skips this.
func renders(t *testing.T, dot []byte) {
	t.Helper()
	if _, err := exec.LookPath("dot"); err != nil {
		sshtest.Missing(t, "Graphviz's dot is not installed (apt-get install graphviz)")
	}
	cmd := exec.Command("dot", "-Tsvg")
	cmd.Stdin = bytes.NewReader(dot)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("dot -Tsvg: %v\n%s", err, stderr.String())
	}
	if !bytes.Contains(out.Bytes(), []byte("<svg")) {
		t.Fatalf("dot -Tsvg wrote no SVG:\n%s", out.String())
	}
}

// TestSimProfiles draws every simulated profile from its facts, with no
// spec, and checks the problems each shows.
func TestSimProfiles(t *testing.T) {
	// What each profile's picture must mark; every profile is listed so a
	// new one cannot go undrawn.
	want := map[string][]ProblemKind{
		// GPU 3 idles at 2.5 GT/s: power saving, not a fault (verify's
		// nvml.pcie_link and bench agree).
		"hgx-h100-stale":     nil,
		"hgx-h100-converged": nil,
		// GPU 3 idling as on stale (not marked), GPU 5 trained at x8 of x16.
		"hgx-h100-degraded": {ProblemLink},
		"hgx-h100-slownic":  nil, // mlx5_5 at 200 Gb/sec: no spec names the rails here (TestRails judges them)
		"hgx-h100-notools":  nil, // stale's hardware: GPU 3 idling
		// The lost GPU stays in sysfs; only NVML and the kernel log miss it.
		"hgx-h100-xid79": nil,
		"dgx-a100":       nil,
		"l40s-rocky9":    nil,
		"gh200":          {ProblemLink}, // the Ethernet port at x8 of x16
		"no-driver":      nil,
		// Healthy trays: GPUs on NVLink-C2C, four rails up.
		"gb200-nvl72-tray": nil,
		"gb300-nvl72-tray": nil,
	}
	for _, name := range sim.Names() {
		t.Run(name, func(t *testing.T) {
			kinds, ok := want[name]
			if !ok {
				t.Fatalf("profile %s has no expectation here", name)
			}
			topo := FromFacts(factsRoot(t, name), nil)
			render(t, "facts-"+name, Picture{Hosts: []string{"sim://" + name}, Topology: topo})
			var got []ProblemKind
			for _, p := range topo.Problems {
				got = append(got, p.Kind)
			}
			if diff := cmp.Diff(kinds, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s\n%v", diff, topo.Problems)
			}
		})
	}
}

// TestDegraded draws a node whose spec and host disagree, from its facts
// and from its spec alone: each problem the issue names shows on the
// picture, on the box it concerns.
func TestDegraded(t *testing.T) {
	decl := loadNode(t, "degraded")
	tests := []struct {
		name string
		topo func() (*Topology, error)
		want []Problem // Kind and Box only
	}{
		{
			name: "facts",
			topo: func() (*Topology, error) { return FromFacts(factsRoot(t, "hgx-h100-stale"), decl), nil },
			// GPU 3's idle Gen1 link is power saving, not a problem.
			want: []Problem{
				{Kind: ProblemCrossSocket, Box: "gpu:3"},
				{Kind: ProblemNUMABind, Box: "gpu:4"},
				{Kind: ProblemMissing, Box: "nic:mlx5_12"},
			},
		},
		{
			// The hardware declares mlx5_12, and says nothing of links.
			name: "spec",
			topo: func() (*Topology, error) { return FromSpec(decl) },
			want: []Problem{
				{Kind: ProblemCrossSocket, Box: "gpu:3"},
				{Kind: ProblemNUMABind, Box: "gpu:4"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := tc.topo()
			if err != nil {
				t.Fatal(err)
			}
			_, dot := render(t, "degraded-"+tc.name, Picture{Nodes: []string{"degraded"}, Hosts: []string{"sim://hgx-h100-stale"}, Topology: topo})
			var got []Problem
			for _, p := range topo.Problems {
				got = append(got, Problem{Kind: p.Kind, Box: p.Box})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			checkMarked(t, dot, tc.want)
		})
	}
}

// TestSpecQuickstart draws the quickstart node from its hardware value:
// the picture -offline gives, with no problem on a consistent spec.
func TestSpecQuickstart(t *testing.T) {
	cfg, diags := spec.Load(filepath.Join("..", "..", "examples", "quickstart"), spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	topo, err := FromSpec(cfg.Nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	render(t, "spec-quickstart", Picture{Nodes: []string{cfg.Nodes[0].Name}, Hosts: []string{"sim://hgx-h100-stale"}, Topology: topo})
	if len(topo.Problems) != 0 || len(topo.Pairs) != 8 || topo.Fabric == nil || !topo.Fabric.AllToAll {
		t.Errorf("quickstart hardware: problems %v, %d pairs, fabric %+v", topo.Problems, len(topo.Pairs), topo.Fabric)
	}
}

// TestFromSpecNoHardware: -offline on a node without hardware says what
// to write.
func TestFromSpecNoHardware(t *testing.T) {
	_, err := FromSpec(&spec.Node{Name: "bare"})
	if err == nil || !strings.Contains(err.Error(), `node "bare" has no hardware value`) {
		t.Errorf("err = %v", err)
	}
}

// TestDOTEscaping: names read from a host reach the DOT verbatim, so
// quotes, backslashes and newlines in them must not end a string or turn
// into Graphviz escapes; dot must still lay it out.
func TestDOTEscaping(t *testing.T) {
	n := factsRoot(t, "l40s-rocky9")
	n.CPU.Model = `Evil "CPU" \N \l` + "\nnext"
	for i := range n.PCI {
		if n.PCI[i].Kind == facts.KindEthernet {
			n.PCI[i].RDMADevs = nil
			n.PCI[i].NetDevs = []string{`eth"0\`}
			break
		}
	}
	var b bytes.Buffer
	if err := WriteDOT(&b, []Picture{{Hosts: []string{`host"1`}, Topology: FromFacts(n, nil)}}); err != nil {
		t.Fatal(err)
	}
	renders(t, b.Bytes())
	// What Graphviz itself reads and draws, line by line, for the boxes
	// that carry the host's names: each name verbatim, the CPU model's
	// newline a line break and nothing else an escape. l40s-rocky9 has two
	// sockets and its first Ethernet port is the ConnectX-7 (15b3:1021)
	// at 0000:21:00.0, drawn as nvidia-smi writes it.
	evilCPU := `Evil "CPU" \N \l`
	want := map[string][]string{
		"cluster_p0":  {`host"1`, "2× " + evilCPU, "next (from facts)"},
		"p0/socket:0": {"CPU socket 0", evilCPU, "next"},
		"p0/socket:1": {"CPU socket 1", evilCPU, "next"},
		// A node's name is kept as DOT wrote it (DOT unquotes only \"),
		// its label is drawn with the one backslash the port's name has.
		`p0/nic:eth"0\\`: {`eth"0\`, "ConnectX-7", "00000000:21:00.0"},
	}
	drawn := dotObjects(t, b.Bytes())
	got := map[string][]string{}
	for name := range want {
		got[name] = drawn[name].Text
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("text Graphviz draws (-want +got):\n%s", diff)
	}
}

// checkMarked fails t unless the boxes Graphviz draws in the problem
// colour are the boxes of the problems want and, where there is one, the
// note that lists them; no other.
func checkMarked(t *testing.T, dot string, want []Problem) {
	t.Helper()
	var wantMarked, marked []string
	for _, p := range want {
		wantMarked = append(wantMarked, "p0/"+p.Box)
	}
	if len(want) > 0 {
		wantMarked = append(wantMarked, "p0/problems")
	}
	for name, o := range dotObjects(t, []byte(dot)) {
		if o.Color == colourProblem {
			marked = append(marked, name)
		}
	}
	if diff := cmp.Diff(wantMarked, marked, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("boxes drawn in %s (-want +got):\n%s", colourProblem, diff)
	}
}

// dotObject is a node or cluster as Graphviz lays it out.
type dotObject struct {
	// Color is its color attribute.
	Color string
	// Text are the lines of its label Graphviz draws, after DOT's
	// quoting and its label escapes.
	Text []string
}

// dotObjects lays dot out with Graphviz (dot -Tjson) and returns its nodes
// and clusters by name.
func dotObjects(t *testing.T, dot []byte) map[string]dotObject {
	t.Helper()
	if _, err := exec.LookPath("dot"); err != nil {
		sshtest.Missing(t, "Graphviz's dot is not installed (apt-get install graphviz)")
	}
	cmd := exec.Command("dot", "-Tjson")
	cmd.Stdin = bytes.NewReader(dot)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("dot -Tjson: %v\n%s", err, stderr.String())
	}
	type drawOp struct {
		Op   string `json:"op"`
		Text string `json:"text"`
	}
	var doc struct {
		Objects []struct {
			Name  string   `json:"name"`
			Color string   `json:"color"`
			Label []drawOp `json:"_ldraw_"`
		} `json:"objects"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("dot -Tjson: %v\n%s", err, out.String())
	}
	objects := map[string]dotObject{}
	for _, o := range doc.Objects {
		obj := dotObject{Color: o.Color}
		for _, op := range o.Label {
			if op.Op == "T" {
				obj.Text = append(obj.Text, op.Text)
			}
		}
		objects[o.Name] = obj
	}
	return objects
}

// TestGroup: hosts that draw the same share one picture, folded like
// plan folds them; a host that differs gets its own.
func TestGroup(t *testing.T) {
	stale, converged := factsRoot(t, "hgx-h100-stale"), factsRoot(t, "hgx-h100-converged")
	pics := Group([]Picture{
		{Nodes: []string{"train"}, Hosts: []string{"gpu01"}, Topology: FromFacts(converged, nil)},
		{Nodes: []string{"train"}, Hosts: []string{"gpu03"}, Topology: FromFacts(stale, nil)},
		{Nodes: []string{"train"}, Hosts: []string{"gpu02"}, Topology: FromFacts(converged, nil)},
	})
	var got []string
	for _, p := range pics {
		got = append(got, p.Heading())
	}
	if diff := cmp.Diff([]string{"node train: gpu[01-02]", "node train: gpu03"}, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	// Drawn, each group is a picture of its own, one under the other,
	// each fitting the screen by itself (not 3,644 pt wide for two).
	var b bytes.Buffer
	if err := WriteSVG(&b, pics); err != nil {
		t.Fatal(err)
	}
	var heads []string
	for _, p := range checkPictures(t, b.Bytes()) {
		heads = append(heads, p.Texts[0].Text)
	}
	if diff := cmp.Diff([]string{"node train: gpu[01-02]", "node train: gpu03"}, heads); diff != "" {
		t.Errorf("pictures of the SVG, by heading (-want +got):\n%s", diff)
	}
}

// TestEmptyNode: facts with nothing in them (a VM, an unreadable sysfs)
// still draw: one socket, no devices, and a DOT that dot lays out.
func TestEmptyNode(t *testing.T) {
	topo := FromFacts(&facts.Node{}, nil)
	var tb, db bytes.Buffer
	if err := WriteText(&tb, []Picture{{Hosts: []string{"vm1"}, Topology: topo}}); err != nil {
		t.Fatal(err)
	}
	if err := WriteDOT(&db, []Picture{{Hosts: []string{"vm1"}, Topology: topo}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tb.String(), "No GPUs or NICs.") || !strings.Contains(tb.String(), "CPU socket 0") {
		t.Errorf("text:\n%s", tb.String())
	}
	renders(t, db.Bytes())
}

// TestRails draws nodes whose spec names their compute rails: a rail up
// at a lower rate than the hardware declares, or down, is a problem on its
// NIC's box, with the device, port, bus id and remedy; the DOWN storage
// ports no spec names are not.
func TestRails(t *testing.T) {
	decl := loadNode(t, "rails")
	down := factsRoot(t, "hgx-h100-converged")
	for i := range down.RDMA {
		if down.RDMA[i].Name == "mlx5_9" {
			down.RDMA[i].Ports[0].State, down.RDMA[i].Ports[0].PhysState = "1: DOWN", "2: Polling"
		}
	}
	// mlx5_0 in a Gen4 slot: trained at Gen4, its maximum there.
	capped := factsRoot(t, "hgx-h100-converged")
	for i := range capped.PCI {
		if capped.PCI[i].Address == "0000:18:00.0" {
			capped.PCI[i].CurrentLinkSpeed, capped.PCI[i].PortMaxLinkSpeed = "16.0 GT/s PCIe", "16.0 GT/s PCIe"
		}
	}
	slow := factsRoot(t, "hgx-h100-converged")
	for i := range slow.PCI {
		if slow.PCI[i].Address == "0000:18:00.0" {
			slow.PCI[i].CurrentLinkSpeed = "16.0 GT/s PCIe"
		}
	}
	for _, tc := range []struct {
		name string
		f    *facts.Node
		want []Problem
	}{
		{"capped", capped, nil},
		{"gen4-in-gen5-slot", slow, []Problem{{Kind: ProblemLink, Box: "nic:mlx5_0"}}},
		{"slownic", factsRoot(t, "hgx-h100-slownic"), []Problem{{Kind: ProblemNICLink, Box: "nic:mlx5_5",
			Text: "mlx5_5 port 1 (00000000:5E:00.0): rate 200 Gb/sec (4X HDR), below the 400 Gb/s the hardware declares: a degraded cable or transceiver, or a switch port set to a lower speed (reseat or replace the cable or transceiver; check the switch port; `ibstat mlx5_5` shows the rate, `mlxlink -d mlx5_5 -m` the cable)"}}},
		// GPU 3 idles at Gen1 (power saving, not marked); GPU 5 is at x8.
		{"degraded", factsRoot(t, "hgx-h100-degraded"), []Problem{{Kind: ProblemLink, Box: "gpu:5"}, {Kind: ProblemNICLink, Box: "nic:mlx5_3"}}},
		{"down", down, []Problem{{Kind: ProblemNICLink, Box: "nic:mlx5_9"}}},
		{"converged", factsRoot(t, "hgx-h100-converged"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := FromFacts(tc.f, decl)
			_, dot := render(t, "rails-"+tc.name, Picture{Nodes: []string{"rails"}, Hosts: []string{"sim://hgx-h100-" + tc.name}, Topology: topo})
			var got []Problem
			for _, p := range topo.Problems {
				q := Problem{Kind: p.Kind, Box: p.Box}
				if len(tc.want) > len(got) && tc.want[len(got)].Text != "" {
					q.Text = p.Text
				}
				got = append(got, q)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s\n%v", diff, topo.Problems)
			}
			checkMarked(t, dot, tc.want)
		})
	}
}
