package gres_test

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/gres"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/spec"
)

var update = flag.Bool("update", false, "rewrite golden files")

// profileSpec uses a built-in hardware profile the way the examples do,
// with its numa_binds, and asks for gres.conf.
const profileSpec = `
module "hw" {
  source = "gpuform/%s"
}
node "n" {
  hosts    = ["gpu001"]
  hardware = module.hw.hardware
  numa {
    dynamic "bind" {
      for_each = module.hw.numa_binds
      content {
        gpus = bind.value.gpus
        node = bind.value.node
      }
    }
  }
  slurm {
    gres = true
  }
}
`

func loadProfile(t *testing.T, profile string) *spec.Node {
	t.Helper()
	cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": fmt.Appendf(nil, profileSpec, profile)}, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return cfg.Nodes[0]
}

// simFacts probes a simulated node's root with the real probe: its NUMA
// cpulists are what apply reads on such a host.
func simFacts(t *testing.T, profile string) *facts.Node {
	t.Helper()
	root, err := sim.Materialize(profile, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f, err := facts.Probe(context.Background(), sim.New("sim://"+profile, root), facts.Options{Reads: resource.Reads()})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestGolden renders gres.conf for every built-in hardware profile on the
// simulated host built from the same hardware (provision/sim/roots/hw),
// and compares it with testdata/<profile>.gres.conf (-update rewrites).
func TestGolden(t *testing.T) {
	tests := []struct {
		profile string
		// host gives the NUMA layout: a sim profile, or "" for one built
		// here where no simulated host has the hardware.
		host string
		numa []facts.NUMANode
	}{
		{profile: "hgx-h100-8gpu", host: "hgx-h100-converged"},
		{profile: "dgx-a100", host: "dgx-a100"},
		{profile: "gh200", host: "gh200"},
		{profile: "gb200-nvl72-tray", host: "gb200-nvl72-tray"},
		{profile: "gb300-nvl72-tray", host: "gb300-nvl72-tray"},
		{profile: "l40s-8gpu-pcie", host: "l40s-rocky9"},
		// Two 32-core sockets with hyperthreads, NPS2 (modules/README.md's
		// source gives the four nodes, not the CPU numbers).
		{profile: "a100-pcie-4gpu", numa: []facts.NUMANode{
			{ID: 0, CPUs: "0-15,64-79"}, {ID: 1, CPUs: "16-31,80-95"},
			{ID: 2, CPUs: "32-47,96-111"}, {ID: 3, CPUs: "48-63,112-127"},
		}},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.profile] = true
		t.Run(tt.profile, func(t *testing.T) {
			f := &facts.Node{NUMA: tt.numa}
			if tt.host != "" {
				f = simFacts(t, tt.host)
			}
			c, err := gres.Render(loadProfile(t, tt.profile), f)
			if err != nil {
				t.Fatal(err)
			}
			got := c.Text()
			golden := filepath.Join("testdata", tt.profile+".gres.conf")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("gres.conf differs from %s (go test -update rewrites it):\n%s", golden, got)
			}
		})
	}
	entries, err := fs.ReadDir(modules.FS(), ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), "stack-") && !covered[e.Name()] {
			t.Errorf("built-in hardware profile %s has no golden gres.conf here", e.Name())
		}
	}
}
