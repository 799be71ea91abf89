package kb

import (
	"strings"
	"testing"
)

// TestIMEXPackage: IMEX's package comes from packages.tsv per family
// (the Ubuntu archive's name, confirmed; NVIDIA's RHEL repository's,
// unconfirmed), an unknown name is an error that suggests the known one,
// and a kb_component no table knows fails the load with a suggestion.
func TestIMEXPackage(t *testing.T) {
	t.Parallel()
	k := mustKB(t)
	v, err := ParseVersion("580.159.03")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		family DistroFamily
		name   string
		status Status
	}{
		{Debian, "nvidia-imex-580", Confirmed},
		{RHEL, "nvidia-imex-580", Unconfirmed},
	} {
		p, ok, err := k.AuxPackage(AuxIMEX, tt.family, v)
		if err != nil || !ok || p.Name != tt.name || p.NameFact.Status != tt.status {
			t.Errorf("%s: %+v %v %v, want %s (%s)", tt.family, p, ok, err, tt.name, tt.status)
		}
	}
	if _, _, err := k.AuxPackage("imx", Debian, v); err == nil || !strings.Contains(err.Error(), `Did you mean "imex"?`) {
		t.Errorf("unknown name: %v", err)
	}
	if _, ok, err := k.AuxPackage(AuxIMEX, "suse", v); ok || err != nil {
		t.Errorf("a family without a row: ok %v, %v; want no name and no error", ok, err)
	}
	r := row{t: &table{file: "packages.tsv", cols: map[string]int{"kb_component": 0}}, line: 7, cells: []string{"imx"}}
	if _, err := tableComponent(r, "kb_component"); err == nil || !strings.Contains(err.Error(), `Did you mean "imex"?`) {
		t.Errorf("tableComponent(imx): %v", err)
	}
}
