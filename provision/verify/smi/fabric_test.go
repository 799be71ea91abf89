package smi

import (
	"testing"
)

// FuzzParseFabric: any text either parses or is an error, never a panic.
func FuzzParseFabric(f *testing.F) {
	f.Add("Fabric\n    State : Completed\n    Status : Success\n    CliqueId : 2\n    ClusterUUID : dc6e40c4-d722-4357-9ba6-5291dd461278\n")
	f.Add("    Fabric\n        CliqueId : x\n")
	f.Fuzz(func(t *testing.T, s string) {
		fs, err := ParseFabric(s)
		if err == nil {
			for _, x := range fs {
				if x.State == "" {
					t.Fatalf("parsed a section without State: %+v", x)
				}
			}
		}
	})
}
