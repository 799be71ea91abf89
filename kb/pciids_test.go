package kb

import "testing"

func TestGPUByPCIID(t *testing.T) {
	kb := mustKB(t)
	tests := map[string]string{
		"0x2330": "H100 SXM5 80GB (HGX/DGX H100)",
		"0x20B2": "A100 SXM4 80GB (HGX/DGX A100)",
		"0x26b9": "L40S",
		"0x2342": "GH200 Grace Hopper Superchip",
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
