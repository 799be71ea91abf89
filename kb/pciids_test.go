package kb

import "testing"

func TestGPUByPCIID(t *testing.T) {
	kb := mustKB(t)
	tests := map[string]string{
		"0x2330": "H100 SXM5 80GB (HGX/DGX H100)",
		"0x20B2": "A100 SXM4 80GB (HGX/DGX A100)",
		"0x26b9": "L40S",
		"0x2342": "GH200 Grace Hopper Superchip",
		// From a later release's table (secondary).
		"0x2941": "GB200 (NVL72 / NVL4)",
		"0x31c2": "GB300 (NVL72)",
		// Not in NVIDIA's table of the 550 open modules: unknown.
		"0x2901": "",
		"":       "",
	}
	for id, want := range tests {
		t.Run(id, func(t *testing.T) {
			d, ok := kb.GPUByPCIID(id)
			if ok != (want != "") || d.Model.Name != want {
				t.Errorf("GPUByPCIID(%q) = %q, %v; want %q", id, d.Model.Name, ok, want)
			}
			if ok && len(d.Sources) == 0 {
				t.Errorf("%s has no source", id)
			}
		})
	}
}

// TestGBNVLinks: the GB200 and GB300 rows say how many NVLinks each GPU
// has, so graph's matrix writes NV18 on a tray as nvidia-smi topo -m does.
func TestGBNVLinks(t *testing.T) {
	kb := mustKB(t)
	for _, id := range []string{"0x2941", "0x31c2"} {
		d, ok := kb.GPUByPCIID(id)
		if !ok {
			t.Fatalf("%s unknown", id)
		}
		if got := d.Model.NVLinks(); got != 18 {
			t.Errorf("%s (%s): NVLinks() = %d, want 18", id, d.Model.Name, got)
		}
	}
	// gpuform graph asks by the tray modules' gpu_model spelling.
	for _, name := range []string{"GB200", "GB300"} {
		m, ok := kb.GPU(name)
		if !ok || m.NVLinks() != 18 {
			t.Errorf("GPU(%q) = %q, %v with %d NVLinks; want 18", name, m.Name, ok, m.NVLinks())
		}
	}
}
