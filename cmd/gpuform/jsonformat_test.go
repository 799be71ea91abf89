package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/jsonformat"
)

// TestEveryJSONDocumentSameFormatVersion runs every command that writes JSON
// and checks each document, and the facts nested in facts -json, carries the
// one format_version: consumers check a single string.
func TestEveryJSONDocumentSameFormatVersion(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := "testdata/planapply"
	for _, args := range [][]string{
		{"version", "-json"},
		{"validate", "-json", dir},
		{"lint", "-format", "json", dir},
		{"lint", "-json", dir},
		{"plan", "-json", dir},
		{"facts", "-json", dir},
		{"apply", "-auto-approve", "-json", dir},
		{"verify", "-format", "json", dir},
		{"verify", "-json", dir},
		{"bench", "-json", "-layers", "hbm", dir},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, out, errOut := runPA(t, env, "", args...)
			var doc struct {
				FormatVersion *string `json:"format_version"`
				Hosts         []struct {
					Facts *struct {
						FormatVersion string `json:"format_version"`
					} `json:"facts"`
				} `json:"hosts"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("not one JSON document: %v\n%s\n%s", err, out, errOut)
			}
			if doc.FormatVersion == nil || *doc.FormatVersion != jsonformat.Version {
				t.Fatalf("format_version = %v, want %q\n%s", doc.FormatVersion, jsonformat.Version, out)
			}
			for _, h := range doc.Hosts {
				if h.Facts != nil && h.Facts.FormatVersion != jsonformat.Version {
					t.Errorf("nested facts format_version = %q, want %q", h.Facts.FormatVersion, jsonformat.Version)
				}
			}
		})
	}
}
