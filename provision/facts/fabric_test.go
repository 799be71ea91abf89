package facts

import (
	"os"
	"strings"
	"testing"
)

// TestFabricDomainOnCaptures: the published GB200 Fabric section is a
// domain (its cluster and clique); Azure's "Insufficient Resources" one and
// a GPU without an NVLink fabric ("N/A", as nvidia-smi prints it on
// boards without one) are not; nor are GPUs in two cliques.
func TestFabricDomainOnCaptures(t *testing.T) {
	t.Parallel()
	read := func(file string) []GPUFabric {
		b, err := os.ReadFile("../verify/smi/testdata/fabric/" + file)
		if err != nil {
			t.Fatal(err)
		}
		gs, err := ParseFabricText(string(b))
		if err != nil || len(gs) != 1 {
			t.Fatalf("%s: %v %v", file, gs, err)
		}
		return gs
	}
	ok := read("nvidia-smi-q-fabric-gb200-success-health-unhealthy.txt")
	bad := read("nvidia-smi-q-fabric-insufficient-resources-azure.txt")
	na, err := ParseFabricText("GPU 00000000:18:00.0\n    Fabric\n        State                             : N/A\n        Status                            : N/A\n        CliqueId                          : N/A\n        ClusterUUID                       : N/A\n")
	if err != nil {
		t.Fatal(err)
	}
	other := []GPUFabric{ok[0], ok[0]}
	other[1].CliqueID = 3
	for _, tt := range []struct {
		name string
		f    *NVLinkFabric
		want string // the domain, or a word of the error
	}{
		{"registered", &NVLinkFabric{GPUs: append(ok, ok...)}, "dc6e40c4-d722-4357-9ba6-5291dd461278/2"},
		{"insufficient resources", &NVLinkFabric{GPUs: append(ok, bad...)}, "GPU 1's NVLink fabric registration is Completed (status Insufficient Resources)"},
		{"no fabric", &NVLinkFabric{GPUs: na}, "registration is N/A"},
		{"two cliques", &NVLinkFabric{GPUs: other}, "different fabric cliques"},
		{"no GPU", &NVLinkFabric{GPUs: []GPUFabric{}}, "no GPU with an NVLink fabric"},
		{"not read", nil, "not read"},
	} {
		got, err := tt.f.Domain()
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	many := strings.Repeat("Fabric\n    State : Completed\n", maxFabricGPUs+1)
	if _, err := ParseFabricText(many); err == nil {
		t.Errorf("%d Fabric sections parsed", maxFabricGPUs+1)
	}
}
