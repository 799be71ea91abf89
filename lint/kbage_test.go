package lint

import (
	"testing"
	"time"
)

// knowledge_base_age counts from the refresh date, not the newest fact:
// silent 90 days after it, one finding the day after (issue 29: it counted
// from the newest row and stayed silent for half a year).
func TestKnowledgeBaseAgeCountsFromRefreshDate(t *testing.T) {
	r, ok := testKB.RefreshDate()
	if !ok {
		t.Fatal("no refresh date")
	}
	cfg := loadSpec(t, map[string]string{"n.gpuform.hcl": `node "n" { hosts = ["h"] }`})
	count := func(now time.Time) int {
		res, diags := Run(cfg, Options{KB: testKB, Now: now, MinSeverity: Info})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		n := 0
		for _, f := range res.Findings {
			if f.Rule == "knowledge_base_age" {
				n++
			}
		}
		return n
	}
	if n := count(r.Date.Add(90 * 24 * time.Hour)); n != 0 {
		t.Errorf("90 days after the refresh: %d findings, want none", n)
	}
	if n := count(r.Date.Add(91 * 24 * time.Hour)); n != 1 {
		t.Errorf("91 days after the refresh: %d findings, want one", n)
	}
	if d, _ := testKB.NewestFact(); d.Date.After(r.Date) {
		t.Errorf("newest fact %s is after the refresh date %s", d, r)
	}
}
