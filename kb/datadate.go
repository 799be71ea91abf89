package kb

import (
	"fmt"
	"time"
)

// DataDate is the date of the newest dated fact in the knowledge base: the
// newest container-toolkit or NCCL tag, or the newest NGC image release
// (counted from the first of its month). Releases after it are unknown to
// this build of gpuform.
type DataDate struct {
	// Date is the day, UTC.
	Date time.Time
	// What names the fact ("NVIDIA Container Toolkit 1.20.0 (tagged 2026-08-12)").
	What string
	Fact
}

// String is the date as YYYY-MM-DD.
func (d DataDate) String() string { return d.Date.Format(time.DateOnly) }

// NewestFact returns the DataDate; ok=false only if no table row carries a
// date, which TestNewestFact rules out for the embedded tables.
func (kb *KB) NewestFact() (DataDate, bool) {
	var best DataDate
	found := false
	consider := func(day time.Time, what string, f Fact) {
		if !found || day.After(best.Date) {
			best, found = DataDate{Date: day, What: what, Fact: f}, true
		}
	}
	for _, r := range kb.toolkit {
		if d, err := time.Parse(time.DateOnly, r.Date); err == nil {
			consider(d, fmt.Sprintf("NVIDIA Container Toolkit %s (tagged %s)", r.Version, r.Date), r.Fact)
		}
	}
	for _, r := range kb.nccl {
		if d, err := time.Parse(time.DateOnly, r.Date); err == nil {
			consider(d, fmt.Sprintf("NCCL %s (tagged %s)", r.Version, r.Date), r.Fact)
		}
	}
	for _, img := range kb.ngc {
		if d, err := time.Parse("06.01", img.Release); err == nil {
			consider(d, fmt.Sprintf("NGC image %s (released %s)", img.Image, d.Format("2006-01")), img.Fact)
		}
	}
	return best, found
}

// refreshDate is the day the knowledge base's tables were last checked
// against their sources, as a whole: the oldest of the per-table dates in
// docs/knowledge-base.md (a knowledge base is as current as its stalest
// table). It is set by hand when the tables are refreshed; TestRefreshDate
// keeps it equal to that oldest date and no older than the newest dated
// fact.
const refreshDate = "2026-11-30"

// RefreshDate is the day the tables were last checked against their
// sources: the date the knowledge base is as good as. Releases published
// after it are unknown to this build; lint's knowledge_base_age counts
// from it.
func (kb *KB) RefreshDate() (DataDate, bool) {
	d, err := time.Parse(time.DateOnly, refreshDate)
	if err != nil {
		return DataDate{}, false
	}
	return DataDate{Date: d, What: "every table was checked against its sources on or after " + refreshDate + " (docs/knowledge-base.md)"}, true
}
