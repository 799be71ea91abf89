package spec_test

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/spec"
)

// slurm_node_name maps every host of a range; a template that cannot give
// a Slurm node name says which name it made for which host.
func TestSlurmNodeName(t *testing.T) {
	hosts, err := spec.ExpandHostPattern("gpu[001-003].dc1.example.com")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, template string
		want           []string
		err            string
	}{
		{"short", "{short}", []string{"gpu001", "gpu002", "gpu003"}, ""},
		{"prefixed", "dc1-{short}", []string{"dc1-gpu001", "dc1-gpu002", "dc1-gpu003"}, ""},
		{"whole", "{host}", hosts, ""},
		{"unknown placeholder", "{rack}-{short}", nil, "only {host} and {short}"},
		{"bad character", "{short}:0", nil, `gives "gpu001:0" for host gpu001.dc1.example.com`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, h := range hosts {
				n, err := spec.SlurmNodeName(tc.template, h)
				if err != nil {
					if tc.err == "" || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("%s: %v, want %q", h, err, tc.err)
					}
					return
				}
				got = append(got, n)
			}
			if tc.err != "" || strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got %v, want %v (error %q)", got, tc.want, tc.err)
			}
		})
	}
}
