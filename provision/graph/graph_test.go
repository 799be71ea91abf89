package graph

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

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

// render writes both formats of one picture, checks them against their
// golden files, and has Graphviz parse and lay out the DOT.
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
		"hgx-h100-stale":     {ProblemLink}, // GPU 3 idling at 2.5 GT/s
		"hgx-h100-converged": nil,
		"dgx-a100":           nil,
		"l40s-rocky9":        nil,
		"gh200":              {ProblemLink}, // the Ethernet port at x8 of x16
		"no-driver":          nil,
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
