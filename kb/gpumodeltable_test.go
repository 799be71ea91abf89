package kb

import (
	"strings"
	"testing"
)

// TestGPUModelTable checks what spec.Load is given to judge gpu_model by:
// the spellings users write are known, a typo is not, and the names offered
// for it are the table's model names without their remarks.
func TestGPUModelTable(t *testing.T) {
	table := mustKB(t).GPUModelTable()
	for _, name := range []string{"H100 SXM5 80GB", "H100-SXM5-80GB", "H100 SXM5 80GB (HGX/DGX H100)", "NVIDIA H100 80GB HBM3", "H100", "L40S", "A100 PCIe 80GB"} {
		if !table.Known(name) {
			t.Errorf("Known(%q) = false, want true", name)
		}
	}
	for _, name := range []string{"H100 SXM6 80GB", "RTX 9090", ""} {
		if table.Known(name) {
			t.Errorf("Known(%q) = true, want false", name)
		}
	}
	found := false
	for _, n := range table.Names {
		if strings.Contains(n, "(") {
			t.Errorf("suggested name %q keeps its remark", n)
		}
		found = found || n == "H100 SXM5 80GB"
	}
	if !found {
		t.Errorf("Names lacks \"H100 SXM5 80GB\": %q", table.Names)
	}
}

// TestLoadGPUModelTableIsLoads: the table facts loads alone is the whole
// knowledge base's: the same names in the same order, and every name
// and alias of the model tables known alike (unknown ones too).
func TestLoadGPUModelTableIsLoads(t *testing.T) {
	k := mustKB(t)
	want := k.GPUModelTable()
	got, err := LoadGPUModelTable()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Names, "\n") != strings.Join(want.Names, "\n") || got.Source != want.Source {
		t.Errorf("names or source differ:\n got %q %q\nwant %q %q", got.Names, got.Source, want.Names, want.Source)
	}
	if len(got.Names) < 20 {
		t.Errorf("only %d model names", len(got.Names))
	}
	probe := []string{"H100 SXM6 80GB", "RTX 9090", "", "h100", "NVIDIA H100 80GB HBM3"}
	for _, g := range k.gpus {
		probe = append(probe, g.Name, modelKey(g.Name))
	}
	for alias := range k.aliases {
		probe = append(probe, alias)
	}
	for _, name := range probe {
		if got.Known(name) != want.Known(name) {
			t.Errorf("Known(%q) = %v, the whole knowledge base's %v", name, got.Known(name), want.Known(name))
		}
	}
}
