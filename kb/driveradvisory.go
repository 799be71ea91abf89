package kb

import (
	"strconv"
	"time"
)

// DriverAdvisory is one row of driver-advisories.tsv: a CVE of NVIDIA's GPU
// display driver security bulletins as it affects one data-center ("Tesla")
// Linux branch, and the first release of that branch that fixes it.
type DriverAdvisory struct {
	// Bulletin is NVIDIA's bulletin number ("5821"), the a_id of
	// https://nvidia.custhelp.com/app/answers/detail/a_id/<n>.
	Bulletin string
	// Published is the bulletin's "Updated" date.
	Published time.Time
	// CVE is the CVE id.
	CVE string
	// Branch is the driver branch (580 for R580).
	Branch int
	// FixedIn is the first release of the branch without it; the bulletin
	// lists "all driver versions prior to" it as affected.
	FixedIn Version
	// Configuration is "all", or the non-default setup that alone exposes
	// a host ("mig", "vgpu-host", "run-installer"): gpuform's reading of
	// the CVE's description, which names the component.
	Configuration string
	// Severity is NVIDIA's rating and CVSS base score ("HIGH 8.8").
	Severity string
	Fact
}

// AllConfigurations reports whether every host running an affected release
// is exposed, not only one in a non-default setup.
func (a DriverAdvisory) AllConfigurations() bool { return a.Configuration == "all" }

// configurations a driver advisory row may name.
var advisoryConfigurations = map[string]bool{"all": true, "mig": true, "vgpu-host": true, "run-installer": true}

func (kb *KB) loadDriverAdvisories() error {
	t, err := readTable(kb.fsys, "data/driver-advisories.tsv", "bulletin", "published", "cve", "branch", "fixed_in", "configuration", "severity", "status", "sources")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		day, err := time.Parse(time.DateOnly, r.get("published"))
		if err != nil {
			return r.errorf("published %q: want YYYY-MM-DD", r.get("published"))
		}
		br, err := strconv.Atoi(r.get("branch"))
		if err != nil {
			return r.errorf("branch %q: want a number", r.get("branch"))
		}
		v, err := ParseDriverVersion(r.get("fixed_in"))
		if err != nil || !v.IsExact() || v.Major() != br {
			return r.errorf("fixed_in %q: want an exact release of branch %d", r.get("fixed_in"), br)
		}
		conf := r.get("configuration")
		if !advisoryConfigurations[conf] {
			return r.errorf("configuration %q: want all, mig, vgpu-host or run-installer", conf)
		}
		kb.advisories = append(kb.advisories, DriverAdvisory{Bulletin: r.get("bulletin"), Published: day, CVE: r.get("cve"),
			Branch: br, FixedIn: v, Configuration: conf, Severity: r.get("severity"), Fact: r.fact(st, "sources", "")})
	}
	return nil
}

// DriverAdvisories returns the advisories that affect driver release v:
// those of v's branch whose fixed release is newer than v. A floating
// branch ("580") is answered only when every release of the branch is
// affected, which the tables never say; a branch the bulletins do not list
// has no answer either (see DriverAdvisoryBranches): lint says when a
// branch is not covered.
func (kb *KB) DriverAdvisories(v Version) []DriverAdvisory {
	if !v.IsExact() {
		return nil
	}
	var out []DriverAdvisory
	for _, a := range kb.advisories {
		if a.Branch == v.Major() && v.Compare(a.FixedIn) < 0 {
			out = append(out, a)
		}
	}
	return out
}

// DriverAdvisoryList returns every row, in table order.
func (kb *KB) DriverAdvisoryList() []DriverAdvisory {
	return append([]DriverAdvisory(nil), kb.advisories...)
}

// NewestDriverBulletin returns the newest bulletin the table was built from.
func (kb *KB) NewestDriverBulletin() (DriverAdvisory, bool) {
	var best DriverAdvisory
	found := false
	for _, a := range kb.advisories {
		if !found || a.Published.After(best.Published) {
			best, found = a, true
		}
	}
	return best, found
}
