package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/jsonformat"
)

// TestVersionKnowledgeBaseDate: `gpuform version` and `version -json` say
// how current the embedded knowledge base is (issue 12: the data had no
// date).
func TestVersionKnowledgeBaseDate(t *testing.T) {
	d, ok := testKB(t).NewestFact()
	if !ok {
		t.Fatal("no dated fact")
	}
	code, out, _ := runCLI(t, "", "version")
	if code != ExitOK || !strings.Contains(out, "knowledge base: newest fact "+d.String()) {
		t.Errorf("version: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "", "version", "-json")
	if code != ExitOK {
		t.Fatalf("version -json: exit %d", code)
	}
	var v map[string]string
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v["knowledge_base_date"] != d.String() || v["knowledge_base_newest"] != d.What || v["format_version"] != jsonformat.Version {
		t.Errorf("version -json: %v", v)
	}
	// The refresh date is the day the tables were last checked, not the
	// newest release: issue 29 found version reporting 2026-08-12 (the
	// newest row) while releases since August were unknown.
	r, ok := testKB(t).RefreshDate()
	if !ok || v["knowledge_base_refresh_date"] != r.String() || r.String() == d.String() {
		t.Errorf("version -json knowledge_base_refresh_date %q, want %q (distinct from the newest fact %s)", v["knowledge_base_refresh_date"], r, d)
	}
	if _, out, _ := runCLI(t, "", "version"); !strings.Contains(out, "knowledge base: refreshed "+r.String()) {
		t.Errorf("version does not print the refresh date:\n%s", out)
	}
}
