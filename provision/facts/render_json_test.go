package facts_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/provision/facts"
)

// TestRenderJSONStreamsTheSameDocument: RenderJSON writes host by host
// what encoding the whole Document writes, byte for byte, for no host, one
// failed host, and probed hosts with HTML-significant and non-ASCII text.
func TestRenderJSONStreamsTheSameDocument(t *testing.T) {
	t.Parallel()
	var probed facts.Node
	b, err := os.ReadFile(filepath.Join("testdata", "golden", "hgx-h100-converged.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &probed); err != nil {
		t.Fatal(err)
	}
	odd := probed
	odd.Warnings = []string{"<script> & \\u2028 ünïcode \"quoted\""}
	for name, hosts := range map[string][]facts.HostFacts{
		"none":   {},
		"nil":    nil,
		"failed": {{Host: "gpu001", Node: "train", Error: "connect: refused <&>"}},
		"fleet":  {{Host: "gpu001", Node: "train", Facts: &probed}, {Host: "gpu002", Error: "auth"}, {Host: "gpu003", Node: "train", Facts: &odd}},
	} {
		t.Run(name, func(t *testing.T) {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetIndent("", "  ")
			if err := enc.Encode(facts.Document{FormatVersion: jsonformat.Version, Hosts: hosts}); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := facts.RenderJSON(&got, hosts); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.String(), got.String()); diff != "" {
				t.Errorf("RenderJSON differs from encoding the whole document (-want +got):\n%s", diff)
			}
		})
	}
}
